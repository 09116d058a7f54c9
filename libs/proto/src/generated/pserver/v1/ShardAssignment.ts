// Original file: proto/pserver/v1/master.proto

import type { ShardReplica as _pserver_v1_ShardReplica, ShardReplica__Output as _pserver_v1_ShardReplica__Output } from '../../pserver/v1/ShardReplica';
import type { Long } from '@grpc/proto-loader';

/**
 * Who serves one shard index.
 */
export interface ShardAssignment {
  /**
   * The index.
   */
  'index'?: (number);
  /**
   * The pserver's gRPC address, "" while the index is unassigned.
   */
  'address'?: (string);
  /**
   * The shard epoch: trainers stamp it on their requests to this shard. 0 while unassigned.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * The pserver's member name.
   */
  'member'?: (string);
  /**
   * Whether the pserver serves the shard: false while it is assigned but still recovering it (or
   * before it starts serving). Trainers send to a shard only when it serves, and wait otherwise.
   */
  'serving'?: (boolean);
  /**
   * The shard's replicas (for operators; trainers talk to the primary only).
   */
  'replicas'?: (_pserver_v1_ShardReplica)[];
}

/**
 * Who serves one shard index.
 */
export interface ShardAssignment__Output {
  /**
   * The index.
   */
  'index': (number);
  /**
   * The pserver's gRPC address, "" while the index is unassigned.
   */
  'address': (string);
  /**
   * The shard epoch: trainers stamp it on their requests to this shard. 0 while unassigned.
   */
  'shardEpoch': (number);
  /**
   * The pserver's member name.
   */
  'member': (string);
  /**
   * Whether the pserver serves the shard: false while it is assigned but still recovering it (or
   * before it starts serving). Trainers send to a shard only when it serves, and wait otherwise.
   */
  'serving': (boolean);
  /**
   * The shard's replicas (for operators; trainers talk to the primary only).
   */
  'replicas': (_pserver_v1_ShardReplica__Output)[];
}
