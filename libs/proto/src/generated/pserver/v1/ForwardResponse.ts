// Original file: proto/pserver/v1/replication.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A batch's answer.
 */
export interface ForwardResponse {
  /**
   * The replica's last applied sequence number (at least the batch's last).
   */
  'appliedSeq'?: (number | string | Long);
}

/**
 * A batch's answer.
 */
export interface ForwardResponse__Output {
  /**
   * The replica's last applied sequence number (at least the batch's last).
   */
  'appliedSeq': (number);
}
