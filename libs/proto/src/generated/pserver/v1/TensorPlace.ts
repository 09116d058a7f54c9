// Original file: proto/pserver/v1/checkpoint.proto

import type { FramePlace as _pserver_v1_FramePlace, FramePlace__Output as _pserver_v1_FramePlace__Output } from '../../pserver/v1/FramePlace';

/**
 * Where one tensor or block's record is.
 */
export interface TensorPlace {
  /**
   * The tensor or block (`w`, `w@3`).
   */
  'name'?: (string);
  /**
   * Its TensorRecord frame.
   */
  'frame'?: (_pserver_v1_FramePlace | null);
}

/**
 * Where one tensor or block's record is.
 */
export interface TensorPlace__Output {
  /**
   * The tensor or block (`w`, `w@3`).
   */
  'name': (string);
  /**
   * Its TensorRecord frame.
   */
  'frame': (_pserver_v1_FramePlace__Output | null);
}
