import type { OptimizerConfig, TableSpec, Tensor } from '@pserver/proto';

/** One tensor or block of a shard, copied: what a checkpoint record holds. */
export interface TensorSnapshot {
  tensor: Tensor & { name: string; content: Uint8Array };
  optimizer: OptimizerConfig | null;
  state: {
    updates: number;
    slots: { name: string; content: Uint8Array }[];
    scalars: Record<string, number>;
  } | null;
}

/** One sparse table's part on a shard, copied: a table record and its row sections. */
export interface TableSnapshot {
  spec: TableSpec & { name: string };
  step: number;
  /** float32 values per row. */
  stride: number;
  /** Counting admission: ids not yet admitted (int64 LE) and their counts (uint32 LE). */
  pendingIds: Uint8Array;
  pendingCounts: Uint8Array;
  /** A delta: ids evicted since the parent, int64 LE. */
  evictedIds?: Uint8Array;
  /**
   * Parallel columns: ids int64 LE, values `stride` float32 LE a row, lastSeen and counts uint32
   * LE. In a delta, only the rows pushed since the parent.
   */
  /** Rows in `sections`, written in the table's record before them. */
  rows: number;
  /**
   * Read once, in order, each section after the previous one was written: a writer may be handed
   * the same buffers for each.
   */
  sections: Iterable<{
    ids: Uint8Array;
    values: Uint8Array;
    lastSeen: Uint8Array;
    counts: Uint8Array;
    /** Rows are in ascending bucket order: the buckets of the section's first and last rows. */
    firstBucket: number;
    lastBucket: number;
  }>;
}

export interface StepMarkSnapshot {
  trainerId: number;
  step: number;
  updatedUnixMs: number;
}

/**
 * A shard as it was at one instant, copied while updates were paused: writing it to disk takes
 * as long as it takes without holding the shard up.
 */
export interface ShardSnapshot {
  index: number;
  shardCount: number;
  shardEpoch: number;
  /** The checkpoint's sequence number within the shard epoch, from 1. */
  seq: number;
  /** The checkpoint's UUID (its meta's, and its file name's). */
  uuid: string;
  /**
   * A delta: the UUID of the checkpoint it applies on. Its tables then hold only the rows pushed
   * and the ids evicted since then; tensors and step marks are whole in every file.
   */
  parentUuid?: string;
  blockSize: number;
  job: string;
  /** When the copy was taken, in nanoseconds since the Unix epoch (a decimal string). */
  createdUnixNs: string;
  /** Gradients applied by the shard when the copy was taken. */
  updatesApplied: number;
  tensors: TensorSnapshot[];
  /** Sparse tables; a snapshot with any is written in format 2. */
  tables?: TableSnapshot[];
  marks: StepMarkSnapshot[];
  /** SYNC: the steps the shard had closed (0 otherwise). */
  closedSteps?: number;
  /**
   * Groups of slices (tensor and block names, `<table>@<bucket>`) whose marks are ahead of
   * `marks` for some trainers: a shard restored onto another shard count holds slices from several
   * shards. Empty or absent otherwise.
   */
  marksAhead?: { slices: string[]; marks: StepMarkSnapshot[] }[];
}

// The wall clock has milliseconds; the monotonic clock adds the nanoseconds.
const unixNsOrigin = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

/** The current time in nanoseconds since the Unix epoch, as a decimal string. */
export function nowUnixNs(): string {
  return (unixNsOrigin + process.hrtime.bigint()).toString();
}
