// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Keeps a session alive.
 */
export interface KeepAliveRequest {
  /**
   * The trainer's id.
   */
  'trainerId'?: (number | string | Long);
}

/**
 * Keeps a session alive.
 */
export interface KeepAliveRequest__Output {
  /**
   * The trainer's id.
   */
  'trainerId': (number);
}
