// Original file: proto/pserver/v1/replication.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Forward's reply.
 */
export interface ForwardResponse {
  /**
   * The replica's last applied sequence number (at least the request's).
   */
  'appliedSeq'?: (number | string | Long);
}

/**
 * Forward's reply.
 */
export interface ForwardResponse__Output {
  /**
   * The replica's last applied sequence number (at least the request's).
   */
  'appliedSeq': (number);
}
