// Original file: proto/pserver/v1/checkpoint.proto

import type { CheckpointHeader as _pserver_v1_CheckpointHeader, CheckpointHeader__Output as _pserver_v1_CheckpointHeader__Output } from '../../pserver/v1/CheckpointHeader';
import type { TensorRecord as _pserver_v1_TensorRecord, TensorRecord__Output as _pserver_v1_TensorRecord__Output } from '../../pserver/v1/TensorRecord';
import type { StepMarks as _pserver_v1_StepMarks, StepMarks__Output as _pserver_v1_StepMarks__Output } from '../../pserver/v1/StepMarks';
import type { CheckpointFooter as _pserver_v1_CheckpointFooter, CheckpointFooter__Output as _pserver_v1_CheckpointFooter__Output } from '../../pserver/v1/CheckpointFooter';
import type { TableRecord as _pserver_v1_TableRecord, TableRecord__Output as _pserver_v1_TableRecord__Output } from '../../pserver/v1/TableRecord';
import type { TableRows as _pserver_v1_TableRows, TableRows__Output as _pserver_v1_TableRows__Output } from '../../pserver/v1/TableRows';
import type { TableEvictions as _pserver_v1_TableEvictions, TableEvictions__Output as _pserver_v1_TableEvictions__Output } from '../../pserver/v1/TableEvictions';
import type { CheckpointIndex as _pserver_v1_CheckpointIndex, CheckpointIndex__Output as _pserver_v1_CheckpointIndex__Output } from '../../pserver/v1/CheckpointIndex';

/**
 * A checkpoint file holds one shard. It is a sequence of frames, each a varint byte length
 * followed by a serialized CheckpointFrame: one header first, then records (one per tensor or
 * block, and the step marks), then one footer. Records are read and written one at a time, so no
 * message approaches protobuf's 2 GiB limit and any language can read the file with its protobuf
 * library and a varint reader.
 */
export interface CheckpointFrame {
  /**
   * Always the first frame.
   */
  'header'?: (_pserver_v1_CheckpointHeader | null);
  /**
   * A tensor or block with its optimizer.
   */
  'tensor'?: (_pserver_v1_TensorRecord | null);
  /**
   * The per-trainer step high-water marks.
   */
  'stepMarks'?: (_pserver_v1_StepMarks | null);
  /**
   * Always the last frame.
   */
  'footer'?: (_pserver_v1_CheckpointFooter | null);
  /**
   * A sparse table's part on the shard: spec and state; its rows follow (format 2).
   */
  'table'?: (_pserver_v1_TableRecord | null);
  /**
   * Rows of the table of the last TableRecord (format 2).
   */
  'tableRows'?: (_pserver_v1_TableRows | null);
  /**
   * Ids of the table of the last TableRecord evicted since the parent checkpoint (a delta,
   * format 3); they come before that table's rows.
   */
  'tableEvictions'?: (_pserver_v1_TableEvictions | null);
  /**
   * Where each table's records are, so a reader can read one bucket without a scan: after the
   * step marks, in files with tables. Its place is in the file's meta (`index`).
   */
  'index'?: (_pserver_v1_CheckpointIndex | null);
  /**
   * What this frame holds.
   */
  'frame'?: "header"|"tensor"|"stepMarks"|"footer"|"table"|"tableRows"|"tableEvictions"|"index";
}

/**
 * A checkpoint file holds one shard. It is a sequence of frames, each a varint byte length
 * followed by a serialized CheckpointFrame: one header first, then records (one per tensor or
 * block, and the step marks), then one footer. Records are read and written one at a time, so no
 * message approaches protobuf's 2 GiB limit and any language can read the file with its protobuf
 * library and a varint reader.
 */
export interface CheckpointFrame__Output {
  /**
   * Always the first frame.
   */
  'header'?: (_pserver_v1_CheckpointHeader__Output | null);
  /**
   * A tensor or block with its optimizer.
   */
  'tensor'?: (_pserver_v1_TensorRecord__Output | null);
  /**
   * The per-trainer step high-water marks.
   */
  'stepMarks'?: (_pserver_v1_StepMarks__Output | null);
  /**
   * Always the last frame.
   */
  'footer'?: (_pserver_v1_CheckpointFooter__Output | null);
  /**
   * A sparse table's part on the shard: spec and state; its rows follow (format 2).
   */
  'table'?: (_pserver_v1_TableRecord__Output | null);
  /**
   * Rows of the table of the last TableRecord (format 2).
   */
  'tableRows'?: (_pserver_v1_TableRows__Output | null);
  /**
   * Ids of the table of the last TableRecord evicted since the parent checkpoint (a delta,
   * format 3); they come before that table's rows.
   */
  'tableEvictions'?: (_pserver_v1_TableEvictions__Output | null);
  /**
   * Where each table's records are, so a reader can read one bucket without a scan: after the
   * step marks, in files with tables. Its place is in the file's meta (`index`).
   */
  'index'?: (_pserver_v1_CheckpointIndex__Output | null);
  /**
   * What this frame holds.
   */
  'frame'?: "header"|"tensor"|"stepMarks"|"footer"|"table"|"tableRows"|"tableEvictions"|"index";
}
