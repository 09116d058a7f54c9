// Original file: proto/pserver/v1/optimizer.proto

import type { ConstantLr as _pserver_v1_ConstantLr, ConstantLr__Output as _pserver_v1_ConstantLr__Output } from '../../pserver/v1/ConstantLr';
import type { LinearLr as _pserver_v1_LinearLr, LinearLr__Output as _pserver_v1_LinearLr__Output } from '../../pserver/v1/LinearLr';
import type { StepLr as _pserver_v1_StepLr, StepLr__Output as _pserver_v1_StepLr__Output } from '../../pserver/v1/StepLr';
import type { CosineLr as _pserver_v1_CosineLr, CosineLr__Output as _pserver_v1_CosineLr__Output } from '../../pserver/v1/CosineLr';

/**
 * The learning rate η as a function of t.
 */
export interface LearningRate {
  /**
   * The base rate η₀ ≥ 0. Default: the rule's (see OptimizerConfig.learning_rate); SGD has none.
   */
  'base'?: (number | string);
  /**
   * η = η₀.
   */
  'constant'?: (_pserver_v1_ConstantLr | null);
  /**
   * PaddlePaddle's linear decay: η = max(η₀ − a·t, b).
   */
  'linear'?: (_pserver_v1_LinearLr | null);
  /**
   * Step decay: η = η₀ · γ^floor(t / step_size).
   */
  'step'?: (_pserver_v1_StepLr | null);
  /**
   * Linear warm-up, then cosine annealing to min_rate.
   */
  'cosine'?: (_pserver_v1_CosineLr | null);
  '_base'?: "base";
  /**
   * How η changes with t. Unset means constant.
   */
  'policy'?: "constant"|"linear"|"step"|"cosine";
}

/**
 * The learning rate η as a function of t.
 */
export interface LearningRate__Output {
  /**
   * The base rate η₀ ≥ 0. Default: the rule's (see OptimizerConfig.learning_rate); SGD has none.
   */
  'base'?: (number);
  /**
   * η = η₀.
   */
  'constant'?: (_pserver_v1_ConstantLr__Output | null);
  /**
   * PaddlePaddle's linear decay: η = max(η₀ − a·t, b).
   */
  'linear'?: (_pserver_v1_LinearLr__Output | null);
  /**
   * Step decay: η = η₀ · γ^floor(t / step_size).
   */
  'step'?: (_pserver_v1_StepLr__Output | null);
  /**
   * Linear warm-up, then cosine annealing to min_rate.
   */
  'cosine'?: (_pserver_v1_CosineLr__Output | null);
  '_base'?: "base";
  /**
   * How η changes with t. Unset means constant.
   */
  'policy'?: "constant"|"linear"|"step"|"cosine";
}
