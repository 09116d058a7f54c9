// Original file: proto/pserver/v1/master.proto

import type { ClusterView as _pserver_v1_ClusterView, ClusterView__Output as _pserver_v1_ClusterView__Output } from '../../pserver/v1/ClusterView';
import type { TrainerStatus as _pserver_v1_TrainerStatus, TrainerStatus__Output as _pserver_v1_TrainerStatus__Output } from '../../pserver/v1/TrainerStatus';
import type { PassStatus as _pserver_v1_PassStatus, PassStatus__Output as _pserver_v1_PassStatus__Output } from '../../pserver/v1/PassStatus';
import type { SparePserver as _pserver_v1_SparePserver, SparePserver__Output as _pserver_v1_SparePserver__Output } from '../../pserver/v1/SparePserver';
import type { ReshapeStatus as _pserver_v1_ReshapeStatus, ReshapeStatus__Output as _pserver_v1_ReshapeStatus__Output } from '../../pserver/v1/ReshapeStatus';

/**
 * The master's status.
 */
export interface StatusResponse {
  /**
   * The leader's address.
   */
  'leaderAddress'?: (string);
  /**
   * The cluster view.
   */
  'view'?: (_pserver_v1_ClusterView | null);
  /**
   * Live trainers.
   */
  'trainers'?: (_pserver_v1_TrainerStatus)[];
  /**
   * The current pass's progress (absent before a dataset is set).
   */
  'pass'?: (_pserver_v1_PassStatus | null);
  /**
   * Registered pservers that hold no shard and keep no replica: the spares, oldest first.
   */
  'spares'?: (_pserver_v1_SparePserver)[];
  /**
   * The change of the shard count still being restored (absent: none pending).
   */
  'reshape'?: (_pserver_v1_ReshapeStatus | null);
}

/**
 * The master's status.
 */
export interface StatusResponse__Output {
  /**
   * The leader's address.
   */
  'leaderAddress': (string);
  /**
   * The cluster view.
   */
  'view': (_pserver_v1_ClusterView__Output | null);
  /**
   * Live trainers.
   */
  'trainers': (_pserver_v1_TrainerStatus__Output)[];
  /**
   * The current pass's progress (absent before a dataset is set).
   */
  'pass': (_pserver_v1_PassStatus__Output | null);
  /**
   * Registered pservers that hold no shard and keep no replica: the spares, oldest first.
   */
  'spares': (_pserver_v1_SparePserver__Output)[];
  /**
   * The change of the shard count still being restored (absent: none pending).
   */
  'reshape': (_pserver_v1_ReshapeStatus__Output | null);
}
