// Original file: proto/pserver/v1/master.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';
import type { Long } from '@grpc/proto-loader';

/**
 * Reports a task failed.
 */
export interface TaskFailedRequest {
  /**
   * The caller's context.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * The task's id.
   */
  'taskId'?: (number | string | Long);
  /**
   * The dispatch being reported.
   */
  'dispatch'?: (number | string | Long);
  /**
   * Why, for the logs and Status.
   */
  'reason'?: (string);
}

/**
 * Reports a task failed.
 */
export interface TaskFailedRequest__Output {
  /**
   * The caller's context.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * The task's id.
   */
  'taskId': (number);
  /**
   * The dispatch being reported.
   */
  'dispatch': (number);
  /**
   * Why, for the logs and Status.
   */
  'reason': (string);
}
