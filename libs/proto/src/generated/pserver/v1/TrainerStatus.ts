// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One live trainer.
 */
export interface TrainerStatus {
  /**
   * Its id.
   */
  'trainerId'?: (number | string | Long);
  /**
   * Its name.
   */
  'name'?: (string);
  /**
   * When it registered, in milliseconds since the Unix epoch.
   */
  'registeredUnixMs'?: (number | string | Long);
  /**
   * Tasks it holds.
   */
  'pendingTasks'?: (number | string | Long);
}

/**
 * One live trainer.
 */
export interface TrainerStatus__Output {
  /**
   * Its id.
   */
  'trainerId': (number);
  /**
   * Its name.
   */
  'name': (string);
  /**
   * When it registered, in milliseconds since the Unix epoch.
   */
  'registeredUnixMs': (number);
  /**
   * Tasks it holds.
   */
  'pendingTasks': (number);
}
