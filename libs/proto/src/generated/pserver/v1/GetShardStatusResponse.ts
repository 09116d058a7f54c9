// Original file: proto/pserver/v1/parameter_server.proto

import type { ShardMode as _pserver_v1_ShardMode, ShardMode__Output as _pserver_v1_ShardMode__Output } from '../../pserver/v1/ShardMode';
import type { TensorStatus as _pserver_v1_TensorStatus, TensorStatus__Output as _pserver_v1_TensorStatus__Output } from '../../pserver/v1/TensorStatus';
import type { CheckpointMeta as _pserver_v1_CheckpointMeta, CheckpointMeta__Output as _pserver_v1_CheckpointMeta__Output } from '../../pserver/v1/CheckpointMeta';
import type { TableStatus as _pserver_v1_TableStatus, TableStatus__Output as _pserver_v1_TableStatus__Output } from '../../pserver/v1/TableStatus';
import type { Consistency as _pserver_v1_Consistency, Consistency__Output as _pserver_v1_Consistency__Output } from '../../pserver/v1/Consistency';
import type { ReplicaProgress as _pserver_v1_ReplicaProgress, ReplicaProgress__Output as _pserver_v1_ReplicaProgress__Output } from '../../pserver/v1/ReplicaProgress';
import type { MoveProgress as _pserver_v1_MoveProgress, MoveProgress__Output as _pserver_v1_MoveProgress__Output } from '../../pserver/v1/MoveProgress';
import type { Long } from '@grpc/proto-loader';

/**
 * The shard's status.
 */
export interface GetShardStatusResponse {
  /**
   * The shard's index.
   */
  'index'?: (number);
  /**
   * The job's shard count.
   */
  'shardCount'?: (number);
  /**
   * The shard's epoch: what trainers put in RequestContext.shard_epoch.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * Standalone or cluster.
   */
  'mode'?: (_pserver_v1_ShardMode);
  /**
   * Whether FinishInitParams was called (or the shard was recovered).
   */
  'initialized'?: (boolean);
  /**
   * The tensors and blocks held, by name.
   */
  'tensors'?: (_pserver_v1_TensorStatus)[];
  /**
   * The bytes of all tensors' contents.
   */
  'totalBytes'?: (number | string | Long);
  /**
   * Updates applied since start (one per gradient applied).
   */
  'updatesApplied'?: (number | string | Long);
  /**
   * Time since the process started, in milliseconds.
   */
  'uptimeMs'?: (number | string | Long);
  /**
   * The last committed checkpoint, if any.
   */
  'lastCheckpoint'?: (_pserver_v1_CheckpointMeta | null);
  /**
   * Trainers with a step mark on this shard.
   */
  'trainers'?: (number);
  /**
   * Bytes of pushes being received or applied now (admission control counts these).
   */
  'pushBytesInFlight'?: (number | string | Long);
  /**
   * The tables held, by name.
   */
  'tables'?: (_pserver_v1_TableStatus)[];
  /**
   * The job's consistency mode.
   */
  'consistency'?: (_pserver_v1_Consistency | null);
  /**
   * The shard's version (as SendGradsResponse.version).
   */
  'version'?: (number | string | Long);
  /**
   * As GetParamsResponse.min_clock.
   */
  'minClock'?: (number | string | Long);
  /**
   * SYNC and BOUNDED_STALENESS: the trainers whose steps count, ascending.
   */
  'roster'?: (number | string | Long)[];
  /**
   * The last step of the request's context.trainer_id on this shard: applied, or in SYNC
   * accumulated (0: none, or no trainer id given).
   */
  'trainerLastStep'?: (number | string | Long);
  /**
   * A primary with replicas: the pushes it applied, the sequence its forwards carry (0 without
   * replicas).
   */
  'appliedSeq'?: (number | string | Long);
  /**
   * A primary with replicas: each replica's progress (empty without replicas).
   */
  'replicas'?: (_pserver_v1_ReplicaProgress)[];
  /**
   * During a live change of the shard count: each receiver copying this shard's slices and
   * applying its pushes (applied_seq is then set too).
   */
  'moves'?: (_pserver_v1_MoveProgress)[];
}

/**
 * The shard's status.
 */
export interface GetShardStatusResponse__Output {
  /**
   * The shard's index.
   */
  'index': (number);
  /**
   * The job's shard count.
   */
  'shardCount': (number);
  /**
   * The shard's epoch: what trainers put in RequestContext.shard_epoch.
   */
  'shardEpoch': (number);
  /**
   * Standalone or cluster.
   */
  'mode': (_pserver_v1_ShardMode__Output);
  /**
   * Whether FinishInitParams was called (or the shard was recovered).
   */
  'initialized': (boolean);
  /**
   * The tensors and blocks held, by name.
   */
  'tensors': (_pserver_v1_TensorStatus__Output)[];
  /**
   * The bytes of all tensors' contents.
   */
  'totalBytes': (number);
  /**
   * Updates applied since start (one per gradient applied).
   */
  'updatesApplied': (number);
  /**
   * Time since the process started, in milliseconds.
   */
  'uptimeMs': (number);
  /**
   * The last committed checkpoint, if any.
   */
  'lastCheckpoint': (_pserver_v1_CheckpointMeta__Output | null);
  /**
   * Trainers with a step mark on this shard.
   */
  'trainers': (number);
  /**
   * Bytes of pushes being received or applied now (admission control counts these).
   */
  'pushBytesInFlight': (number);
  /**
   * The tables held, by name.
   */
  'tables': (_pserver_v1_TableStatus__Output)[];
  /**
   * The job's consistency mode.
   */
  'consistency': (_pserver_v1_Consistency__Output | null);
  /**
   * The shard's version (as SendGradsResponse.version).
   */
  'version': (number);
  /**
   * As GetParamsResponse.min_clock.
   */
  'minClock': (number);
  /**
   * SYNC and BOUNDED_STALENESS: the trainers whose steps count, ascending.
   */
  'roster': (number)[];
  /**
   * The last step of the request's context.trainer_id on this shard: applied, or in SYNC
   * accumulated (0: none, or no trainer id given).
   */
  'trainerLastStep': (number);
  /**
   * A primary with replicas: the pushes it applied, the sequence its forwards carry (0 without
   * replicas).
   */
  'appliedSeq': (number);
  /**
   * A primary with replicas: each replica's progress (empty without replicas).
   */
  'replicas': (_pserver_v1_ReplicaProgress__Output)[];
  /**
   * During a live change of the shard count: each receiver copying this shard's slices and
   * applying its pushes (applied_seq is then set too).
   */
  'moves': (_pserver_v1_MoveProgress__Output)[];
}
