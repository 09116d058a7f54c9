/**
 * How long to wait between the attempts of something that failed or is not ready yet, as data.
 * Every loop that tries again names its policy in `backoffPolicies`, so that the waits of the
 * whole system are written in one place and can be read side by side.
 */

/** How a policy's wait grows from one retry to the next, before jitter. */
export type BackoffGrowth =
  /** `firstMs`, then twice as long each time. */
  | 'doubling'
  /** `firstMs` every time. */
  | 'constant'
  /** `firstMs`, then `addMs` longer each time. */
  | { readonly addMs: number };

/**
 * Which part of a wait is random, so that processes cut off together do not all try again at the
 * same moment: none; all of it (`full`: anywhere in [0, wait), AWS's "full jitter"); or the
 * second half (`half`: in [wait/2, wait), never shorter than half the wait).
 */
export type BackoffJitter = 'none' | 'full' | 'half';

export interface BackoffPolicy {
  /** The wait before the first retry, before jitter. */
  readonly firstMs: number;
  /** The longest a wait grows to, before jitter. */
  readonly maxMs: number;
  readonly growth: BackoffGrowth;
  readonly jitter: BackoffJitter;
}

/**
 * The wait before retry number `retry` (1: the one after the first attempt failed): the policy's
 * wait for that retry, capped at `maxMs`, then jittered with `random` (in [0, 1)).
 */
export function backoffDelayMs(
  policy: BackoffPolicy,
  retry: number,
  random: () => number = Math.random,
): number {
  const { firstMs, maxMs, growth, jitter } = policy;
  const before = Math.max(0, Math.floor(retry) - 1);
  const grown =
    growth === 'doubling'
      ? firstMs * 2 ** before
      : growth === 'constant'
        ? firstMs
        : firstMs + growth.addMs * before;
  const ms = Math.min(maxMs, grown);
  if (jitter === 'full') return random() * ms;
  if (jitter === 'half') return ms / 2 + (random() * ms) / 2;
  return ms;
}
