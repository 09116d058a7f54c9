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
  /**
   * Names one logical GetTask: the client makes it once and sends the same id on every retry
   * (also to a new leader). A task already handed out for (trainer_id, request_id) is answered
   * again as it was (same dispatch, same deadline) instead of a second task being taken. Empty:
   * every call takes a new task.
   */
  'requestId'?: (string);
}

/**
 * Asks for a task.
 */
export interface GetTaskRequest__Output {
  /**
   * The caller's context: trainer_id and pass.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * Names one logical GetTask: the client makes it once and sends the same id on every retry
   * (also to a new leader). A task already handed out for (trainer_id, request_id) is answered
   * again as it was (same dispatch, same deadline) instead of a second task being taken. Empty:
   * every call takes a new task.
   */
  'requestId': (string);
}
