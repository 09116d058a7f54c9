// Original file: proto/pserver/v1/checkpoint.proto

import type { StepMark as _pserver_v1_StepMark, StepMark__Output as _pserver_v1_StepMark__Output } from '../../pserver/v1/StepMark';
import type { SliceGroupMarks as _pserver_v1_SliceGroupMarks, SliceGroupMarks__Output as _pserver_v1_SliceGroupMarks__Output } from '../../pserver/v1/SliceGroupMarks';
import type { Long } from '@grpc/proto-loader';

/**
 * The step high-water marks of the trainers that pushed to the shard: they make pushes
 * idempotent across a restart.
 */
export interface StepMarks {
  /**
   * One per trainer.
   */
  'marks'?: (_pserver_v1_StepMark)[];
  /**
   * SYNC: the steps the shard had closed. Its marks are then the trainers' contributions to
   * closed steps only (a step in progress is never in a file).
   */
  'closedSteps'?: (number | string | Long);
  /**
   * Groups of slices whose marks are ahead of `marks` for some trainers: a shard restored onto
   * another shard count holds slices from several shards, each with its shard's marks, until the
   * trainers push past them. Empty otherwise.
   */
  'ahead'?: (_pserver_v1_SliceGroupMarks)[];
}

/**
 * The step high-water marks of the trainers that pushed to the shard: they make pushes
 * idempotent across a restart.
 */
export interface StepMarks__Output {
  /**
   * One per trainer.
   */
  'marks': (_pserver_v1_StepMark__Output)[];
  /**
   * SYNC: the steps the shard had closed. Its marks are then the trainers' contributions to
   * closed steps only (a step in progress is never in a file).
   */
  'closedSteps': (number);
  /**
   * Groups of slices whose marks are ahead of `marks` for some trainers: a shard restored onto
   * another shard count holds slices from several shards, each with its shard's marks, until the
   * trainers push past them. Empty otherwise.
   */
  'ahead': (_pserver_v1_SliceGroupMarks__Output)[];
}
