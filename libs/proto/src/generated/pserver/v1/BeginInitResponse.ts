// Original file: proto/pserver/v1/master.proto

import type { InitDecision as _pserver_v1_InitDecision, InitDecision__Output as _pserver_v1_InitDecision__Output } from '../../pserver/v1/InitDecision';
import type { Long } from '@grpc/proto-loader';

/**
 * BeginInit's reply.
 */
export interface BeginInitResponse {
  /**
   * Initialize, wait, or done.
   */
  'decision'?: (_pserver_v1_InitDecision);
  /**
   * The trainer chosen to initialize (0 when done).
   */
  'ownerTrainerId'?: (number | string | Long);
}

/**
 * BeginInit's reply.
 */
export interface BeginInitResponse__Output {
  /**
   * Initialize, wait, or done.
   */
  'decision': (_pserver_v1_InitDecision__Output);
  /**
   * The trainer chosen to initialize (0 when done).
   */
  'ownerTrainerId': (number);
}
