// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * KeepAlive's reply.
 */
export interface KeepAliveResponse {
  /**
   * The session's time to live from now.
   */
  'sessionTtlMs'?: (number | string | Long);
}

/**
 * KeepAlive's reply.
 */
export interface KeepAliveResponse__Output {
  /**
   * The session's time to live from now.
   */
  'sessionTtlMs': (number);
}
