// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A byte range of a file. The task reads the lines that begin in [start, end): from the first
 * line start at or after `start` (a line starts at offset 0 or right after a newline), each line
 * read to its end even past `end` (the input-split rule: the ranges of a file's tasks tile it, so
 * every line is read by exactly one task).
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
 * A byte range of a file. The task reads the lines that begin in [start, end): from the first
 * line start at or after `start` (a line starts at offset 0 or right after a newline), each line
 * read to its end even past `end` (the input-split rule: the ranges of a file's tasks tile it, so
 * every line is read by exactly one task).
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
