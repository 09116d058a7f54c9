// Original file: proto/pserver/v1/consistency.proto

/**
 * How a job's shards combine the trainers' pushes and gate their reads. Fixed for the job when it
 * first starts (standalone pservers: flags) and the same on every shard.
 */
export const ConsistencyMode = {
  /**
   * Not set: ASYNC.
   */
  CONSISTENCY_MODE_UNSPECIFIED: 'CONSISTENCY_MODE_UNSPECIFIED',
  /**
   * Every push is applied when it arrives; reads return the current values at once.
   */
  CONSISTENCY_MODE_ASYNC: 'CONSISTENCY_MODE_ASYNC',
  /**
   * Synchronous steps: the pushes of step k are accumulated, and the step closes (their weighted
   * mean is applied once) when enough roster members contributed. A read for step k waits until
   * step k − 1 is closed.
   */
  CONSISTENCY_MODE_SYNC: 'CONSISTENCY_MODE_SYNC',
  /**
   * Bounded staleness (SSP): pushes are applied when they arrive; a read for step k waits until
   * every roster member's pushes up to step k − 1 − staleness are in.
   */
  CONSISTENCY_MODE_BOUNDED_STALENESS: 'CONSISTENCY_MODE_BOUNDED_STALENESS',
} as const;

/**
 * How a job's shards combine the trainers' pushes and gate their reads. Fixed for the job when it
 * first starts (standalone pservers: flags) and the same on every shard.
 */
export type ConsistencyMode =
  /**
   * Not set: ASYNC.
   */
  | 'CONSISTENCY_MODE_UNSPECIFIED'
  | 0
  /**
   * Every push is applied when it arrives; reads return the current values at once.
   */
  | 'CONSISTENCY_MODE_ASYNC'
  | 1
  /**
   * Synchronous steps: the pushes of step k are accumulated, and the step closes (their weighted
   * mean is applied once) when enough roster members contributed. A read for step k waits until
   * step k − 1 is closed.
   */
  | 'CONSISTENCY_MODE_SYNC'
  | 2
  /**
   * Bounded staleness (SSP): pushes are applied when they arrive; a read for step k waits until
   * every roster member's pushes up to step k − 1 − staleness are in.
   */
  | 'CONSISTENCY_MODE_BOUNDED_STALENESS'
  | 3

/**
 * How a job's shards combine the trainers' pushes and gate their reads. Fixed for the job when it
 * first starts (standalone pservers: flags) and the same on every shard.
 */
export type ConsistencyMode__Output = typeof ConsistencyMode[keyof typeof ConsistencyMode]
