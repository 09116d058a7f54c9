// Original file: proto/pserver/v1/checkpoint.proto

import type { Long } from '@grpc/proto-loader';

/**
 * The last step of one trainer applied to the shard.
 */
export interface StepMark {
  /**
   * The trainer's id.
   */
  'trainerId'?: (number | string | Long);
  /**
   * Its last applied step.
   */
  'step'?: (number | string | Long);
  /**
   * When it was last updated, in milliseconds since the Unix epoch (for pruning marks of
   * trainers gone for a long time).
   */
  'updatedUnixMs'?: (number | string | Long);
}

/**
 * The last step of one trainer applied to the shard.
 */
export interface StepMark__Output {
  /**
   * The trainer's id.
   */
  'trainerId': (number);
  /**
   * Its last applied step.
   */
  'step': (number);
  /**
   * When it was last updated, in milliseconds since the Unix epoch (for pruning marks of
   * trainers gone for a long time).
   */
  'updatedUnixMs': (number);
}
