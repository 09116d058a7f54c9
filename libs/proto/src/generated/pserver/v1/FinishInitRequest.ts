// Original file: proto/pserver/v1/master.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Reports initialization finished.
 */
export interface FinishInitRequest {
  /**
   * The initializing trainer's context.
   */
  'context'?: (_pserver_v1_RequestContext | null);
}

/**
 * Reports initialization finished.
 */
export interface FinishInitRequest__Output {
  /**
   * The initializing trainer's context.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
}
