/**
 * What a push comes to, decided by its step against what the shard has counted of its trainer:
 * - `apply`: applied now (ASYNC and bounded staleness: every push on arrival);
 * - `join`: joins the open SYNC step, applied with the others when it closes;
 * - `duplicate`: counted already (a retry, or a re-run of a step some shards applied) — answered,
 *   not applied again;
 * - `late`: SYNC, the step closed without it — answered, dropped.
 * A push for a SYNC step after the open one waits for it to close first (the consistency mode's
 * `beforePush`), so it is never classified early.
 */
export type PushFate =
  | { kind: 'apply' }
  | { kind: 'join' }
  | { kind: 'duplicate'; lastStep: number }
  | { kind: 'late'; lastStep: number };

/** The fates a push is answered with at once, without being applied. */
export type SettledFate = Extract<PushFate, { kind: 'duplicate' | 'late' }>;

/**
 * The rule every push goes through, on a primary (`ShardConsistency.classify`) and on a replica
 * (`replay`): `lastStep` is the trainer's last step counted here (applied, or contributed to the
 * open step), `openStep` the open SYNC step (undefined: pushes apply on arrival).
 */
export function fateOf(step: number, lastStep: number, openStep?: number): PushFate {
  if (step <= lastStep) return { kind: 'duplicate', lastStep };
  if (openStep === undefined) return { kind: 'apply' };
  if (step < openStep) return { kind: 'late', lastStep };
  if (step > openStep) throw new Error(`step ${step} pushed before step ${openStep} closed`);
  return { kind: 'join' };
}
