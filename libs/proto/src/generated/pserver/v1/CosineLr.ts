// Original file: proto/pserver/v1/optimizer.proto

import type { Long } from '@grpc/proto-loader';

/**
 * For t ≤ warmup_steps: η = η₀ · t / warmup_steps. Then, with
 * s = min(t − warmup_steps, total_steps − warmup_steps) / (total_steps − warmup_steps):
 * η = min_rate + (η₀ − min_rate) · (1 + cos(π·s)) / 2, so η stays at min_rate after total_steps.
 */
export interface CosineLr {
  /**
   * Updates of linear warm-up; 0 for none.
   */
  'warmupSteps'?: (number | string | Long);
  /**
   * Updates until the rate reaches min_rate; > warmup_steps.
   */
  'totalSteps'?: (number | string | Long);
  /**
   * The final rate, in [0, η₀].
   */
  'minRate'?: (number | string);
}

/**
 * For t ≤ warmup_steps: η = η₀ · t / warmup_steps. Then, with
 * s = min(t − warmup_steps, total_steps − warmup_steps) / (total_steps − warmup_steps):
 * η = min_rate + (η₀ − min_rate) · (1 + cos(π·s)) / 2, so η stays at min_rate after total_steps.
 */
export interface CosineLr__Output {
  /**
   * Updates of linear warm-up; 0 for none.
   */
  'warmupSteps': (number);
  /**
   * Updates until the rate reaches min_rate; > warmup_steps.
   */
  'totalSteps': (number);
  /**
   * The final rate, in [0, η₀].
   */
  'minRate': (number);
}
