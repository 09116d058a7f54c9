// Original file: proto/pserver/v1/checkpoint.proto

import type { TableIndex as _pserver_v1_TableIndex, TableIndex__Output as _pserver_v1_TableIndex__Output } from '../../pserver/v1/TableIndex';
import type { TensorPlace as _pserver_v1_TensorPlace, TensorPlace__Output as _pserver_v1_TensorPlace__Output } from '../../pserver/v1/TensorPlace';
import type { FramePlace as _pserver_v1_FramePlace, FramePlace__Output as _pserver_v1_FramePlace__Output } from '../../pserver/v1/FramePlace';

/**
 * The file's frames by place: byte offset (of the frame's length prefix), length (prefix
 * included) and CRC-32C (of the frame's bytes, prefix included) of each table frame, and for row
 * sections their buckets, so one section can be read and checked alone; and of the header, each
 * tensor record and the step marks, so a reader of part of a shard (a new shard's share when
 * restoring onto another shard count) reads only that part. Files written before the index placed
 * the header, tensors and marks leave those fields empty; readers then read the file whole for
 * them. The fields are additive: the file's format version does not change with them.
 */
export interface CheckpointIndex {
  /**
   * One per table, in file order.
   */
  'tables'?: (_pserver_v1_TableIndex)[];
  /**
   * Every TensorRecord frame, in file order. Listed whenever `step_marks` is set (then a file
   * without tensors lists none); empty when it is unset.
   */
  'tensors'?: (_pserver_v1_TensorPlace)[];
  /**
   * The StepMarks frame. Unset in files written before the index placed it.
   */
  'stepMarks'?: (_pserver_v1_FramePlace | null);
  /**
   * The header frame (at byte 0), set with `step_marks`: a reader of part of the file checks the
   * header it reads too.
   */
  'header'?: (_pserver_v1_FramePlace | null);
}

/**
 * The file's frames by place: byte offset (of the frame's length prefix), length (prefix
 * included) and CRC-32C (of the frame's bytes, prefix included) of each table frame, and for row
 * sections their buckets, so one section can be read and checked alone; and of the header, each
 * tensor record and the step marks, so a reader of part of a shard (a new shard's share when
 * restoring onto another shard count) reads only that part. Files written before the index placed
 * the header, tensors and marks leave those fields empty; readers then read the file whole for
 * them. The fields are additive: the file's format version does not change with them.
 */
export interface CheckpointIndex__Output {
  /**
   * One per table, in file order.
   */
  'tables': (_pserver_v1_TableIndex__Output)[];
  /**
   * Every TensorRecord frame, in file order. Listed whenever `step_marks` is set (then a file
   * without tensors lists none); empty when it is unset.
   */
  'tensors': (_pserver_v1_TensorPlace__Output)[];
  /**
   * The StepMarks frame. Unset in files written before the index placed it.
   */
  'stepMarks': (_pserver_v1_FramePlace__Output | null);
  /**
   * The header frame (at byte 0), set with `step_marks`: a reader of part of the file checks the
   * header it reads too.
   */
  'header': (_pserver_v1_FramePlace__Output | null);
}
