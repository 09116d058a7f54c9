// Original file: proto/pserver/v1/replication.proto


/**
 * Where slices move in a change of the shard count while the job runs: index `index` of
 * `shard_count` shards.
 */
export interface MoveTarget {
  /**
   * The index of the new count the slices go to.
   */
  'index'?: (number);
  /**
   * The new shard count.
   */
  'shardCount'?: (number);
}

/**
 * Where slices move in a change of the shard count while the job runs: index `index` of
 * `shard_count` shards.
 */
export interface MoveTarget__Output {
  /**
   * The index of the new count the slices go to.
   */
  'index': (number);
  /**
   * The new shard count.
   */
  'shardCount': (number);
}
