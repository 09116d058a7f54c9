// Original file: proto/pserver/v1/master.proto

import type { ShardAssignment as _pserver_v1_ShardAssignment, ShardAssignment__Output as _pserver_v1_ShardAssignment__Output } from '../../pserver/v1/ShardAssignment';
import type { Consistency as _pserver_v1_Consistency, Consistency__Output as _pserver_v1_Consistency__Output } from '../../pserver/v1/Consistency';
import type { Long } from '@grpc/proto-loader';

/**
 * The cluster as trainers see it.
 */
export interface ClusterView {
  /**
   * The job's name.
   */
  'job'?: (string);
  /**
   * The desired shard count: indices are [0, shard_count).
   */
  'shardCount'?: (number);
  /**
   * The job's block size in elements, fixed for the life of the job (placement rule).
   */
  'blockSize'?: (number | string | Long);
  /**
   * One entry per index, in index order.
   */
  'shards'?: (_pserver_v1_ShardAssignment)[];
  /**
   * The etcd revision the view was read at: a view with a higher revision is newer.
   */
  'revision'?: (number | string | Long);
  /**
   * Whether the parameters have been initialized.
   */
  'initialized'?: (boolean);
  /**
   * Replicas kept of each shard besides its primary (the job's `--replicas`; 0: none, a shard
   * that fails over is restored from its last checkpoint).
   */
  'replicas'?: (number);
  /**
   * The job's consistency mode (the master's `--consistency`, fixed when the job first started).
   * Trainers run their steps by it; every shard of the job serves it.
   */
  'consistency'?: (_pserver_v1_Consistency | null);
  /**
   * The job is finished (FinishJob): its pservers are leaving and no index is assigned again.
   */
  'finished'?: (boolean);
}

/**
 * The cluster as trainers see it.
 */
export interface ClusterView__Output {
  /**
   * The job's name.
   */
  'job': (string);
  /**
   * The desired shard count: indices are [0, shard_count).
   */
  'shardCount': (number);
  /**
   * The job's block size in elements, fixed for the life of the job (placement rule).
   */
  'blockSize': (number);
  /**
   * One entry per index, in index order.
   */
  'shards': (_pserver_v1_ShardAssignment__Output)[];
  /**
   * The etcd revision the view was read at: a view with a higher revision is newer.
   */
  'revision': (number);
  /**
   * Whether the parameters have been initialized.
   */
  'initialized': (boolean);
  /**
   * Replicas kept of each shard besides its primary (the job's `--replicas`; 0: none, a shard
   * that fails over is restored from its last checkpoint).
   */
  'replicas': (number);
  /**
   * The job's consistency mode (the master's `--consistency`, fixed when the job first started).
   * Trainers run their steps by it; every shard of the job serves it.
   */
  'consistency': (_pserver_v1_Consistency__Output | null);
  /**
   * The job is finished (FinishJob): its pservers are leaving and no index is assigned again.
   */
  'finished': (boolean);
}
