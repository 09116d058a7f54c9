// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Records [start, end).
 */
export interface RecordRange {
  /**
   * The first record.
   */
  'start'?: (number | string | Long);
  /**
   * Just past the last record.
   */
  'end'?: (number | string | Long);
}

/**
 * Records [start, end).
 */
export interface RecordRange__Output {
  /**
   * The first record.
   */
  'start': (number);
  /**
   * Just past the last record.
   */
  'end': (number);
}
