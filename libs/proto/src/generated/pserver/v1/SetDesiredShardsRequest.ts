// Original file: proto/pserver/v1/master.proto


/**
 * Sets the desired shard count.
 */
export interface SetDesiredShardsRequest {
  /**
   * The new count, ≥ 1.
   */
  'shardCount'?: (number);
}

/**
 * Sets the desired shard count.
 */
export interface SetDesiredShardsRequest__Output {
  /**
   * The new count, ≥ 1.
   */
  'shardCount': (number);
}
