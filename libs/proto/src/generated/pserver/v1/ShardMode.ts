// Original file: proto/pserver/v1/parameter_server.proto

/**
 * How a pserver runs.
 */
export const ShardMode = {
  /**
   * Not set.
   */
  SHARD_MODE_UNSPECIFIED: 'SHARD_MODE_UNSPECIFIED',
  /**
   * No etcd: a fixed index and shard count, the manifest in the checkpoint directory.
   */
  SHARD_MODE_STANDALONE: 'SHARD_MODE_STANDALONE',
  /**
   * Index assigned by the master through etcd.
   */
  SHARD_MODE_CLUSTER: 'SHARD_MODE_CLUSTER',
} as const;

/**
 * How a pserver runs.
 */
export type ShardMode =
  /**
   * Not set.
   */
  | 'SHARD_MODE_UNSPECIFIED'
  | 0
  /**
   * No etcd: a fixed index and shard count, the manifest in the checkpoint directory.
   */
  | 'SHARD_MODE_STANDALONE'
  | 1
  /**
   * Index assigned by the master through etcd.
   */
  | 'SHARD_MODE_CLUSTER'
  | 2

/**
 * How a pserver runs.
 */
export type ShardMode__Output = typeof ShardMode[keyof typeof ShardMode]
