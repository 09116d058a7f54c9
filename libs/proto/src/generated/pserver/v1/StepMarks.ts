// Original file: proto/pserver/v1/checkpoint.proto

import type { StepMark as _pserver_v1_StepMark, StepMark__Output as _pserver_v1_StepMark__Output } from '../../pserver/v1/StepMark';

/**
 * The step high-water marks of the trainers that pushed to the shard: they make pushes
 * idempotent across a restart.
 */
export interface StepMarks {
  /**
   * One per trainer.
   */
  'marks'?: (_pserver_v1_StepMark)[];
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
}
