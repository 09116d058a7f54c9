// Original file: proto/pserver/v1/master.proto

import type { FileDataset as _pserver_v1_FileDataset, FileDataset__Output as _pserver_v1_FileDataset__Output } from '../../pserver/v1/FileDataset';
import type { RecordDataset as _pserver_v1_RecordDataset, RecordDataset__Output as _pserver_v1_RecordDataset__Output } from '../../pserver/v1/RecordDataset';
import type { Long } from '@grpc/proto-loader';

/**
 * Sets the dataset.
 */
export interface SetDatasetRequest {
  /**
   * Line-oriented files (JSON Lines, CSV, text), split into byte ranges.
   */
  'files'?: (_pserver_v1_FileDataset | null);
  /**
   * Generated data: record indices [0, records), split into ranges.
   */
  'records'?: (_pserver_v1_RecordDataset | null);
  /**
   * How long a trainer may hold a task before it is handed to another. Default 300000 (5 min).
   */
  'taskTimeoutMs'?: (number | string | Long);
  /**
   * Failures (timeouts included) after which a task is set aside for the pass. Default 3.
   */
  'maxFailures'?: (number);
  /**
   * What the dataset is.
   */
  'source'?: "files"|"records";
  '_taskTimeoutMs'?: "taskTimeoutMs";
  '_maxFailures'?: "maxFailures";
}

/**
 * Sets the dataset.
 */
export interface SetDatasetRequest__Output {
  /**
   * Line-oriented files (JSON Lines, CSV, text), split into byte ranges.
   */
  'files'?: (_pserver_v1_FileDataset__Output | null);
  /**
   * Generated data: record indices [0, records), split into ranges.
   */
  'records'?: (_pserver_v1_RecordDataset__Output | null);
  /**
   * How long a trainer may hold a task before it is handed to another. Default 300000 (5 min).
   */
  'taskTimeoutMs'?: (number);
  /**
   * Failures (timeouts included) after which a task is set aside for the pass. Default 3.
   */
  'maxFailures'?: (number);
  /**
   * What the dataset is.
   */
  'source'?: "files"|"records";
  '_taskTimeoutMs'?: "taskTimeoutMs";
  '_maxFailures'?: "maxFailures";
}
