// Original file: proto/pserver/v1/checkpoint.proto

import type { StepMark as _pserver_v1_StepMark, StepMark__Output as _pserver_v1_StepMark__Output } from '../../pserver/v1/StepMark';

/**
 * Slices that came from one shard, with the marks they hold ahead of the shard's own.
 */
export interface SliceGroupMarks {
  /**
   * Dense tensors and blocks by name (`w`, `w@3`), table buckets as `<table>@<bucket>`.
   */
  'slices'?: (string)[];
  /**
   * Each trainer's last step counted in these slices, where it is above the shard's own mark.
   */
  'marks'?: (_pserver_v1_StepMark)[];
}

/**
 * Slices that came from one shard, with the marks they hold ahead of the shard's own.
 */
export interface SliceGroupMarks__Output {
  /**
   * Dense tensors and blocks by name (`w`, `w@3`), table buckets as `<table>@<bucket>`.
   */
  'slices': (string)[];
  /**
   * Each trainer's last step counted in these slices, where it is above the shard's own mark.
   */
  'marks': (_pserver_v1_StepMark__Output)[];
}
