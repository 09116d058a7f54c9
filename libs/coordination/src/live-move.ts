import { sparesOf } from './assignment';
import type { JobState } from './job-state';

/**
 * A live move (DESIGN section 3, `reshape/receiver/`): while the job runs at the old count, the
 * receiver of each index of the new count copies the slices that index takes from every old
 * primary and follows their pushes; at the hand-back each old primary says which receivers hold
 * its last push; the change then gives each index whose receiver holds every old primary's to
 * that receiver, which serves its share from memory instead of restoring it from checkpoints.
 */

/** `reshape/receiver/<k>`: the pserver that receives index k's slices. */
export interface MoveReceiverValue {
  member: string;
  address: string;
}

/** `reshape/final-seq/<i>`: old index i's last push when handed back, and who holds it. */
export interface FinalSeq {
  /** The epoch of the primary that handed the index back. */
  epoch: number;
  seq: number;
  /** The receivers that had applied every push through `seq`. */
  moved: string[];
}

/**
 * `reshape/decision`: whether a live change goes on (`go`: every old primary's receivers copied
 * its shard and caught up) or is rolled back, and why, by the old index that decided first.
 */
export interface MoveDecision {
  go: boolean;
  reason: string;
  index: number;
}

export function encodeMoveDecision({ go, reason, index }: MoveDecision): string {
  return JSON.stringify({ go, reason, index });
}

/** A decision value, or undefined for one that is not. */
export function parseMoveDecision(value: string): MoveDecision | undefined {
  try {
    const { go, reason, index } = JSON.parse(value) as Record<string, unknown>;
    return typeof go === 'boolean' && typeof reason === 'string' && Number.isSafeInteger(index)
      ? { go, reason, index: index as number }
      : undefined;
  } catch {
    return undefined;
  }
}

export function encodeReceiver(value: MoveReceiverValue): string {
  return JSON.stringify({ member: value.member, address: value.address });
}

/** A receiver value, or undefined for one that is not (written by another version). */
export function parseReceiver(value: string): MoveReceiverValue | undefined {
  try {
    const { member, address } = JSON.parse(value) as Record<string, unknown>;
    return typeof member === 'string' && typeof address === 'string'
      ? { member, address }
      : undefined;
  } catch {
    return undefined;
  }
}

export function encodeFinalSeq(value: FinalSeq): string {
  return JSON.stringify({ epoch: value.epoch, seq: value.seq, moved: [...value.moved].sort() });
}

/** A final-seq value, or undefined for one that is not. */
export function parseFinalSeq(value: string): FinalSeq | undefined {
  try {
    const { epoch, seq, moved } = JSON.parse(value) as Record<string, unknown>;
    const count = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
    return count(epoch) &&
      count(seq) &&
      Array.isArray(moved) &&
      moved.every((m) => typeof m === 'string')
      ? { epoch, seq, moved: moved as string[] }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Who receives each index of `to` shards: the primary of an index the old count has too (its
 * slices stay where they are), a spare for each of the others, first registered first, while
 * there are spares. An index with no one to receive it is restored from checkpoints.
 */
export function planReceivers(
  state: Pick<JobState, 'pservers' | 'assignments' | 'replicaAssignments'>,
  to: number,
): Map<number, { member: string; address: string; lease: string }> {
  const plan = new Map<number, { member: string; address: string; lease: string }>();
  const spares = sparesOf(state);
  for (let index = 0; index < to; index++) {
    const primary = state.assignments.find((a) => a.index === index);
    const receiver = primary ?? spares.shift();
    if (receiver)
      plan.set(index, {
        member: receiver.member,
        address: receiver.address,
        lease: receiver.lease,
      });
  }
  return plan;
}

/**
 * The indices of the new count whose receiver holds every push of every old index (each old
 * primary listed it among those that applied its last), with that receiver: `index → member`.
 */
export function movedShares(
  from: number,
  receivers: ReadonlyMap<number, MoveReceiverValue>,
  finals: ReadonlyMap<number, FinalSeq>,
): Map<number, string> {
  const moved = new Map<number, string>();
  for (const [index, { member }] of receivers) {
    let holds = true;
    for (let old = 0; old < from && holds; old++)
      holds = finals.get(old)?.moved.includes(member) ?? false;
    if (holds) moved.set(index, member);
  }
  return moved;
}
