// Original file: proto/pserver/v1/table.proto

import type { Long } from '@grpc/proto-loader';

/**
 * When rows are removed. Evicted rows read as missing (their init value) and start again from it.
 */
export interface Eviction {
  /**
   * Remove rows not pushed for more than this many table steps.
   */
  'ttlSteps'?: (number | string | Long);
  /**
   * Keep at most this many rows per shard: creating one more evicts the least recently pushed of
   * a sample.
   */
  'maxRows'?: (number | string | Long);
  '_ttlSteps'?: "ttlSteps";
  '_maxRows'?: "maxRows";
}

/**
 * When rows are removed. Evicted rows read as missing (their init value) and start again from it.
 */
export interface Eviction__Output {
  /**
   * Remove rows not pushed for more than this many table steps.
   */
  'ttlSteps'?: (number);
  /**
   * Keep at most this many rows per shard: creating one more evicts the least recently pushed of
   * a sample.
   */
  'maxRows'?: (number);
  '_ttlSteps'?: "ttlSteps";
  '_maxRows'?: "maxRows";
}
