// Original file: proto/pserver/v1/replication.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A SYNC step the primary closed.
 */
export interface ClosedStep {
  /**
   * The trainers whose contributions it applied.
   */
  'contributors'?: (number | string | Long)[];
}

/**
 * A SYNC step the primary closed.
 */
export interface ClosedStep__Output {
  /**
   * The trainers whose contributions it applied.
   */
  'contributors': (number)[];
}
