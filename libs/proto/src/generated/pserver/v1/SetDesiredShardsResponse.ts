// Original file: proto/pserver/v1/master.proto

import type { ReshapeStatus as _pserver_v1_ReshapeStatus, ReshapeStatus__Output as _pserver_v1_ReshapeStatus__Output } from '../../pserver/v1/ReshapeStatus';

/**
 * SetDesiredShards's reply.
 */
export interface SetDesiredShardsResponse {
  /**
   * The count asked (in effect at once for a job that is down; once every shard was handed back
   * for a running one).
   */
  'shardCount'?: (number);
  /**
   * The count before the call.
   */
  'previousShardCount'?: (number);
  /**
   * The reshape pending after the call (begun by it, or earlier to the same count; absent: none).
   */
  'reshape'?: (_pserver_v1_ReshapeStatus | null);
}

/**
 * SetDesiredShards's reply.
 */
export interface SetDesiredShardsResponse__Output {
  /**
   * The count asked (in effect at once for a job that is down; once every shard was handed back
   * for a running one).
   */
  'shardCount': (number);
  /**
   * The count before the call.
   */
  'previousShardCount': (number);
  /**
   * The reshape pending after the call (begun by it, or earlier to the same count; absent: none).
   */
  'reshape': (_pserver_v1_ReshapeStatus__Output | null);
}
