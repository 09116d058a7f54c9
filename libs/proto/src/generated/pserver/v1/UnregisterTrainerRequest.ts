// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Ends a session.
 */
export interface UnregisterTrainerRequest {
  /**
   * The trainer's id.
   */
  'trainerId'?: (number | string | Long);
}

/**
 * Ends a session.
 */
export interface UnregisterTrainerRequest__Output {
  /**
   * The trainer's id.
   */
  'trainerId': (number);
}
