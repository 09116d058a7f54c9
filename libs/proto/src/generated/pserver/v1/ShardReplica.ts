// Original file: proto/pserver/v1/master.proto


/**
 * A replica of a shard.
 */
export interface ShardReplica {
  /**
   * Its member name.
   */
  'member'?: (string);
  /**
   * Its gRPC address.
   */
  'address'?: (string);
  /**
   * Whether it holds every push the primary acknowledged (it may be promoted).
   */
  'inSync'?: (boolean);
}

/**
 * A replica of a shard.
 */
export interface ShardReplica__Output {
  /**
   * Its member name.
   */
  'member': (string);
  /**
   * Its gRPC address.
   */
  'address': (string);
  /**
   * Whether it holds every push the primary acknowledged (it may be promoted).
   */
  'inSync': (boolean);
}
