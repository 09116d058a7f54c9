// Original file: proto/pserver/v1/optimizer.proto

import type { Long } from '@grpc/proto-loader';

/**
 * η = η₀ · γ^floor(t / step_size).
 */
export interface StepLr {
  /**
   * Updates per decay step, ≥ 1.
   */
  'stepSize'?: (number | string | Long);
  /**
   * γ in (0, 1]. Default 0.1.
   */
  'gamma'?: (number | string);
  '_gamma'?: "gamma";
}

/**
 * η = η₀ · γ^floor(t / step_size).
 */
export interface StepLr__Output {
  /**
   * Updates per decay step, ≥ 1.
   */
  'stepSize': (number);
  /**
   * γ in (0, 1]. Default 0.1.
   */
  'gamma'?: (number);
  '_gamma'?: "gamma";
}
