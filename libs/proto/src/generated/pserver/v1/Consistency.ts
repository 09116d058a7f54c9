// Original file: proto/pserver/v1/consistency.proto

import type { ConsistencyMode as _pserver_v1_ConsistencyMode, ConsistencyMode__Output as _pserver_v1_ConsistencyMode__Output } from '../../pserver/v1/ConsistencyMode';
import type { Long } from '@grpc/proto-loader';

/**
 * A job's consistency mode and its parameters.
 */
export interface Consistency {
  /**
   * The mode.
   */
  'mode'?: (_pserver_v1_ConsistencyMode);
  /**
   * BOUNDED_STALENESS: how many steps a trainer may run ahead of the slowest roster member (0
   * reads like SYNC, but every push is still applied on its own).
   */
  'staleness'?: (number | string | Long);
  /**
   * SYNC: how many roster members' contributions close a step (K); 0 means all of them. With
   * K below the roster's size the others are backups: their pushes for a closed step are
   * answered PUSH_OUTCOME_DROPPED_LATE.
   */
  'replicasToAggregate'?: (number);
}

/**
 * A job's consistency mode and its parameters.
 */
export interface Consistency__Output {
  /**
   * The mode.
   */
  'mode': (_pserver_v1_ConsistencyMode__Output);
  /**
   * BOUNDED_STALENESS: how many steps a trainer may run ahead of the slowest roster member (0
   * reads like SYNC, but every push is still applied on its own).
   */
  'staleness': (number);
  /**
   * SYNC: how many roster members' contributions close a step (K); 0 means all of them. With
   * K below the roster's size the others are backups: their pushes for a closed step are
   * answered PUSH_OUTCOME_DROPPED_LATE.
   */
  'replicasToAggregate': (number);
}
