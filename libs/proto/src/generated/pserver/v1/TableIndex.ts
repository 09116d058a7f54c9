// Original file: proto/pserver/v1/checkpoint.proto

import type { FramePlace as _pserver_v1_FramePlace, FramePlace__Output as _pserver_v1_FramePlace__Output } from '../../pserver/v1/FramePlace';
import type { SectionPlace as _pserver_v1_SectionPlace, SectionPlace__Output as _pserver_v1_SectionPlace__Output } from '../../pserver/v1/SectionPlace';

/**
 * Where one table's frames are.
 */
export interface TableIndex {
  /**
   * The table.
   */
  'table'?: (string);
  /**
   * Its TableRecord frame.
   */
  'record'?: (_pserver_v1_FramePlace | null);
  /**
   * Its TableEvictions frames (a delta).
   */
  'evictions'?: (_pserver_v1_FramePlace)[];
  /**
   * Its TableRows frames, in bucket order.
   */
  'sections'?: (_pserver_v1_SectionPlace)[];
}

/**
 * Where one table's frames are.
 */
export interface TableIndex__Output {
  /**
   * The table.
   */
  'table': (string);
  /**
   * Its TableRecord frame.
   */
  'record': (_pserver_v1_FramePlace__Output | null);
  /**
   * Its TableEvictions frames (a delta).
   */
  'evictions': (_pserver_v1_FramePlace__Output)[];
  /**
   * Its TableRows frames, in bucket order.
   */
  'sections': (_pserver_v1_SectionPlace__Output)[];
}
