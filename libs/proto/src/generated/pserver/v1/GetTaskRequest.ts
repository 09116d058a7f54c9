// Original file: proto/pserver/v1/master.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Asks for a task.
 */
export interface GetTaskRequest {
  /**
   * The caller's context: trainer_id and pass.
   */
  'context'?: (_pserver_v1_RequestContext | null);
}

/**
 * Asks for a task.
 */
export interface GetTaskRequest__Output {
  /**
   * The caller's context: trainer_id and pass.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
}
