// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Line-oriented files.
 */
export interface FileDataset {
  /**
   * Glob patterns of files readable by the master and the trainers. Non-empty.
   */
  'globs'?: (string)[];
  /**
   * The target task size in bytes, ≥ 1.
   */
  'taskBytes'?: (number | string | Long);
}

/**
 * Line-oriented files.
 */
export interface FileDataset__Output {
  /**
   * Glob patterns of files readable by the master and the trainers. Non-empty.
   */
  'globs': (string)[];
  /**
   * The target task size in bytes, ≥ 1.
   */
  'taskBytes': (number);
}
