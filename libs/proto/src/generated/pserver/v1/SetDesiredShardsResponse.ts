// Original file: proto/pserver/v1/master.proto


/**
 * SetDesiredShards's reply.
 */
export interface SetDesiredShardsResponse {
  /**
   * The count now in effect.
   */
  'shardCount'?: (number);
}

/**
 * SetDesiredShards's reply.
 */
export interface SetDesiredShardsResponse__Output {
  /**
   * The count now in effect.
   */
  'shardCount': (number);
}
