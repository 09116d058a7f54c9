import type { OptimizerConfig, Tensor } from '@pserver/proto';

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
  blockSize: number;
  job: string;
  /** When the copy was taken, in nanoseconds since the Unix epoch (a decimal string). */
  createdUnixNs: string;
  /** Gradients applied by the shard when the copy was taken. */
  updatesApplied: number;
  tensors: TensorSnapshot[];
  marks: StepMarkSnapshot[];
}

// The wall clock has milliseconds; the monotonic clock adds the nanoseconds.
const unixNsOrigin = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

/** The current time in nanoseconds since the Unix epoch, as a decimal string. */
export function nowUnixNs(): string {
  return (unixNsOrigin + process.hrtime.bigint()).toString();
}
