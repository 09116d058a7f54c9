// Original file: proto/pserver/v1/master.proto

import type { GetTaskOutcome as _pserver_v1_GetTaskOutcome, GetTaskOutcome__Output as _pserver_v1_GetTaskOutcome__Output } from '../../pserver/v1/GetTaskOutcome';
import type { Task as _pserver_v1_Task, Task__Output as _pserver_v1_Task__Output } from '../../pserver/v1/Task';
import type { Long } from '@grpc/proto-loader';

/**
 * GetTask's reply.
 */
export interface GetTaskResponse {
  /**
   * Whether a task was handed out, and if not, why.
   */
  'outcome'?: (_pserver_v1_GetTaskOutcome);
  /**
   * The task, when outcome is TASK.
   */
  'task'?: (_pserver_v1_Task | null);
  /**
   * The master's current pass.
   */
  'currentPass'?: (number | string | Long);
  /**
   * A hint for when to ask again, for the outcomes that say so.
   */
  'retryAfterMs'?: (number | string | Long);
}

/**
 * GetTask's reply.
 */
export interface GetTaskResponse__Output {
  /**
   * Whether a task was handed out, and if not, why.
   */
  'outcome': (_pserver_v1_GetTaskOutcome__Output);
  /**
   * The task, when outcome is TASK.
   */
  'task': (_pserver_v1_Task__Output | null);
  /**
   * The master's current pass.
   */
  'currentPass': (number);
  /**
   * A hint for when to ask again, for the outcomes that say so.
   */
  'retryAfterMs': (number);
}
