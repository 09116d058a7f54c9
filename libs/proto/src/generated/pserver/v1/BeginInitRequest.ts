// Original file: proto/pserver/v1/master.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Asks whether to initialize.
 */
export interface BeginInitRequest {
  /**
   * The caller's context (trainer_id).
   */
  'context'?: (_pserver_v1_RequestContext | null);
}

/**
 * Asks whether to initialize.
 */
export interface BeginInitRequest__Output {
  /**
   * The caller's context (trainer_id).
   */
  'context': (_pserver_v1_RequestContext__Output | null);
}
