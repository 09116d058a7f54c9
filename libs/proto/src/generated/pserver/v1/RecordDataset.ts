// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A range of generated records.
 */
export interface RecordDataset {
  /**
   * The number of records, ≥ 1.
   */
  'records'?: (number | string | Long);
  /**
   * Records per task, ≥ 1.
   */
  'taskRecords'?: (number | string | Long);
}

/**
 * A range of generated records.
 */
export interface RecordDataset__Output {
  /**
   * The number of records, ≥ 1.
   */
  'records': (number);
  /**
   * Records per task, ≥ 1.
   */
  'taskRecords': (number);
}
