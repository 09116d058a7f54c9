// Original file: proto/pserver/v1/master.proto

import type { ClusterView as _pserver_v1_ClusterView, ClusterView__Output as _pserver_v1_ClusterView__Output } from '../../pserver/v1/ClusterView';
import type { Long } from '@grpc/proto-loader';

/**
 * RegisterTrainer's reply.
 */
export interface RegisterTrainerResponse {
  /**
   * The trainer's id, never reused within the job.
   */
  'trainerId'?: (number | string | Long);
  /**
   * The session's time to live: KeepAlive must arrive within it.
   */
  'sessionTtlMs'?: (number | string | Long);
  /**
   * The current cluster view.
   */
  'view'?: (_pserver_v1_ClusterView | null);
}

/**
 * RegisterTrainer's reply.
 */
export interface RegisterTrainerResponse__Output {
  /**
   * The trainer's id, never reused within the job.
   */
  'trainerId': (number);
  /**
   * The session's time to live: KeepAlive must arrive within it.
   */
  'sessionTtlMs': (number);
  /**
   * The current cluster view.
   */
  'view': (_pserver_v1_ClusterView__Output | null);
}
