// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A pass's progress.
 */
export interface PassStatus {
  /**
   * The pass.
   */
  'pass'?: (number | string | Long);
  /**
   * Tasks waiting to be handed out.
   */
  'todo'?: (number | string | Long);
  /**
   * Tasks held by trainers.
   */
  'pending'?: (number | string | Long);
  /**
   * Tasks done.
   */
  'done'?: (number | string | Long);
  /**
   * Tasks set aside after too many failures.
   */
  'failed'?: (number | string | Long);
  /**
   * Records consumed by finished tasks.
   */
  'recordsProcessed'?: (number | string | Long);
}

/**
 * A pass's progress.
 */
export interface PassStatus__Output {
  /**
   * The pass.
   */
  'pass': (number);
  /**
   * Tasks waiting to be handed out.
   */
  'todo': (number);
  /**
   * Tasks held by trainers.
   */
  'pending': (number);
  /**
   * Tasks done.
   */
  'done': (number);
  /**
   * Tasks set aside after too many failures.
   */
  'failed': (number);
  /**
   * Records consumed by finished tasks.
   */
  'recordsProcessed': (number);
}
