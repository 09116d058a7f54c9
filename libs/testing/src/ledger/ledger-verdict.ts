import type { LedgerAck, LedgerShape, LedgerStepError } from './ledger-trainer';
import type { RestoredCheckpoint } from './restored-checkpoint';

/** A shard restored from a checkpoint by a replacement pserver that then served from `servingMs`. */
export interface ShardRestore {
  index: number;
  servingMs: number;
  checkpoint: RestoredCheckpoint;
}

export interface LedgerInput extends LedgerShape {
  /** The ledger tensor as read at the end. */
  values: ArrayLike<number>;
  /** The shard index that holds a coordinate (the placement rule). */
  shardOf: (coordinate: number) => number;
  acks: LedgerAck[];
  errors: LedgerStepError[];
  restores: ShardRestore[];
}

/** A coordinate the verdict names: whose step it is and what it holds. */
export interface LedgerEntry {
  ordinal: number;
  k: number;
  value: number;
  shard: number;
}

export interface LedgerVerdict {
  /** Applied more than once (or a value that no number of applies of 1.0 makes). */
  doubles: LedgerEntry[];
  /** Zeros that checkpoint-only recovery allows: acknowledged after the restored snapshot. */
  lost: LedgerEntry[];
  /** Zeros it does not: acknowledged before every restored snapshot of the shard, or begun after the replacement served. */
  unexplainedZeros: LedgerEntry[];
  /** Non-zero where no step was acknowledged or even begun. */
  phantoms: LedgerEntry[];
  acknowledged: number;
}

/**
 * Judges the ledger. Every acknowledged step's coordinate must hold exactly 1, or 0 if the
 * update was lost to checkpoint-only recovery: some replacement of its shard restored a checkpoint
 * whose snapshot was taken before the step was acknowledged (so the snapshot may lack it), the
 * step began before that replacement served (so the pserver that acknowledged it may have been
 * the one replaced), and the checkpoint's step marks do not say it held the step. A step that
 * threw may hold 0 or 1. Every other coordinate must be 0.
 */
export function judgeLedger(input: LedgerInput): LedgerVerdict {
  const { values, capacity, shardOf, acks, errors, restores } = input;
  const verdict: LedgerVerdict = {
    doubles: [],
    lost: [],
    unexplainedZeros: [],
    phantoms: [],
    acknowledged: acks.length,
  };
  const ackOf = new Map<number, LedgerAck>();
  for (const ack of acks) ackOf.set(ack.ordinal * capacity + ack.k, ack);
  const failed = new Set(errors.map((e) => e.ordinal * capacity + e.k));
  for (let coordinate = 0; coordinate < values.length; coordinate++) {
    const value = values[coordinate]!;
    const shard = shardOf(coordinate);
    const entry: LedgerEntry = {
      ordinal: Math.floor(coordinate / capacity),
      k: coordinate % capacity,
      value,
      shard,
    };
    if (value !== 0 && value !== 1) {
      verdict.doubles.push(entry);
      continue;
    }
    const ack = ackOf.get(coordinate);
    if (ack) {
      if (value === 1) continue;
      const lostTo = restores.find((r) => r.index === shard && mayHaveLost(r, ack));
      (lostTo ? verdict.lost : verdict.unexplainedZeros).push(entry);
    } else if (value === 1 && !failed.has(coordinate)) {
      verdict.phantoms.push(entry);
    }
  }
  return verdict;
}

/** Whether the restore of `restore` may have lost the acknowledged step `ack`. */
function mayHaveLost(restore: ShardRestore, ack: LedgerAck): boolean {
  const { checkpoint, servingMs } = restore;
  if (checkpoint.snapshotMs > ack.ackMs || ack.startMs >= servingMs) return false;
  // The marks hold the last step of each trainer id applied in the snapshot: a step at or below
  // its trainer's mark was in the snapshot, so the restore cannot have lost it.
  if (ack.trainerId !== undefined && ack.step !== undefined) {
    const mark = checkpoint.marks.get(ack.trainerId);
    if (mark !== undefined && ack.step <= mark) return false;
  }
  return true;
}

/** A one-line summary of entries, e.g. `3 (ordinal 1 k 17 = 2 on shard 0, …)`. */
export function describeEntries(entries: LedgerEntry[], shown = 8): string {
  if (entries.length === 0) return '0';
  const listed = entries
    .slice(0, shown)
    .map((e) => `ordinal ${e.ordinal} k ${e.k} = ${e.value} on shard ${e.shard}`)
    .join(', ');
  return `${entries.length} (${listed}${entries.length > shown ? ', …' : ''})`;
}
