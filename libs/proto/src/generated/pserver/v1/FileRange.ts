// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A byte range of a file. The task reads the lines that start at or after the first line start
 * at or after `start`, up to and including the line that ends at or after `end` (the input-split
 * rule: every line is read by exactly one task).
 */
export interface FileRange {
  /**
   * The file's path.
   */
  'path'?: (string);
  /**
   * The first byte offset.
   */
  'start'?: (number | string | Long);
  /**
   * The offset just past the range.
   */
  'end'?: (number | string | Long);
}

/**
 * A byte range of a file. The task reads the lines that start at or after the first line start
 * at or after `start`, up to and including the line that ends at or after `end` (the input-split
 * rule: every line is read by exactly one task).
 */
export interface FileRange__Output {
  /**
   * The file's path.
   */
  'path': (string);
  /**
   * The first byte offset.
   */
  'start': (number);
  /**
   * The offset just past the range.
   */
  'end': (number);
}
