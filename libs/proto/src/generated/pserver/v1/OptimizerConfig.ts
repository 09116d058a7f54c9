// Original file: proto/pserver/v1/optimizer.proto

import type { Sgd as _pserver_v1_Sgd, Sgd__Output as _pserver_v1_Sgd__Output } from '../../pserver/v1/Sgd';
import type { Adam as _pserver_v1_Adam, Adam__Output as _pserver_v1_Adam__Output } from '../../pserver/v1/Adam';
import type { AdamW as _pserver_v1_AdamW, AdamW__Output as _pserver_v1_AdamW__Output } from '../../pserver/v1/AdamW';
import type { Adagrad as _pserver_v1_Adagrad, Adagrad__Output as _pserver_v1_Adagrad__Output } from '../../pserver/v1/Adagrad';
import type { Adadelta as _pserver_v1_Adadelta, Adadelta__Output as _pserver_v1_Adadelta__Output } from '../../pserver/v1/Adadelta';
import type { RmsProp as _pserver_v1_RmsProp, RmsProp__Output as _pserver_v1_RmsProp__Output } from '../../pserver/v1/RmsProp';
import type { LearningRate as _pserver_v1_LearningRate, LearningRate__Output as _pserver_v1_LearningRate__Output } from '../../pserver/v1/LearningRate';
import type { NonFinitePolicy as _pserver_v1_NonFinitePolicy, NonFinitePolicy__Output as _pserver_v1_NonFinitePolicy__Output } from '../../pserver/v1/NonFinitePolicy';

/**
 * How the pserver updates one tensor from its gradients. Given once per tensor in InitParam and
 * kept in checkpoints with the learning rate it resolved to filled in (`learning_rate.base`), so
 * a checkpoint keeps the rate it was created with; ListParams returns it so too. A checkpoint
 * written before the rules had their own default rates, without a base, is read with rate 1,
 * the default of that time. An empty config means plain SGD, which needs an explicit learning
 * rate (`learning_rate.base`; 1 subtracts each gradient as sent, for trainers that run their own
 * optimizer and push deltas): without one InitParam is INVALID_ARGUMENT naming the field.
 * 
 * Hyperparameters whose default is not zero are proto3 `optional`, so "unset" (the default
 * applies) and an explicit 0 differ. `t` below counts the updates applied to the tensor, starting
 * at 1 for the first one. Every rule works per block: a shard never sees a whole tensor.
 */
export interface OptimizerConfig {
  /**
   * Stochastic gradient descent, with optional momentum, Nesterov momentum and weight decay.
   */
  'sgd'?: (_pserver_v1_Sgd | null);
  /**
   * Adam with bias correction.
   */
  'adam'?: (_pserver_v1_Adam | null);
  /**
   * Adam with decoupled weight decay.
   */
  'adamw'?: (_pserver_v1_AdamW | null);
  /**
   * Adagrad.
   */
  'adagrad'?: (_pserver_v1_Adagrad | null);
  /**
   * Adadelta.
   */
  'adadelta'?: (_pserver_v1_Adadelta | null);
  /**
   * RMSProp, with optional momentum and the centered variant.
   */
  'rmsprop'?: (_pserver_v1_RmsProp | null);
  /**
   * The learning rate and how it changes with `t`. Unset means constant, at the rule's default
   * rate, as in PyTorch: Adam and AdamW 1e-3, Adagrad and RMSProp 1e-2, Adadelta 1.0; SGD (with
   * or without momentum) has none and must set `base`.
   */
  'learningRate'?: (_pserver_v1_LearningRate | null);
  /**
   * Clip each gradient element to [-clip_value, clip_value] before the update. Unset: no
   * clipping. Must be positive when set.
   */
  'clipValue'?: (number | string);
  /**
   * Scale the block's gradient by clip_norm / ||g||₂ when its L2 norm exceeds clip_norm (norm of
   * the block being updated; global-norm clipping across a model is the trainer client's job).
   * Unset: no clipping. Must be positive when set. Applied after clip_value.
   */
  'clipNorm'?: (number | string);
  /**
   * What to do with a gradient holding NaN or ±Infinity.
   */
  'nonFinite'?: (_pserver_v1_NonFinitePolicy);
  /**
   * The update rule. Unset means `sgd` with its defaults.
   */
  'algorithm'?: "sgd"|"adam"|"adamw"|"adagrad"|"adadelta"|"rmsprop";
  '_clipValue'?: "clipValue";
  '_clipNorm'?: "clipNorm";
}

/**
 * How the pserver updates one tensor from its gradients. Given once per tensor in InitParam and
 * kept in checkpoints with the learning rate it resolved to filled in (`learning_rate.base`), so
 * a checkpoint keeps the rate it was created with; ListParams returns it so too. A checkpoint
 * written before the rules had their own default rates, without a base, is read with rate 1,
 * the default of that time. An empty config means plain SGD, which needs an explicit learning
 * rate (`learning_rate.base`; 1 subtracts each gradient as sent, for trainers that run their own
 * optimizer and push deltas): without one InitParam is INVALID_ARGUMENT naming the field.
 * 
 * Hyperparameters whose default is not zero are proto3 `optional`, so "unset" (the default
 * applies) and an explicit 0 differ. `t` below counts the updates applied to the tensor, starting
 * at 1 for the first one. Every rule works per block: a shard never sees a whole tensor.
 */
export interface OptimizerConfig__Output {
  /**
   * Stochastic gradient descent, with optional momentum, Nesterov momentum and weight decay.
   */
  'sgd'?: (_pserver_v1_Sgd__Output | null);
  /**
   * Adam with bias correction.
   */
  'adam'?: (_pserver_v1_Adam__Output | null);
  /**
   * Adam with decoupled weight decay.
   */
  'adamw'?: (_pserver_v1_AdamW__Output | null);
  /**
   * Adagrad.
   */
  'adagrad'?: (_pserver_v1_Adagrad__Output | null);
  /**
   * Adadelta.
   */
  'adadelta'?: (_pserver_v1_Adadelta__Output | null);
  /**
   * RMSProp, with optional momentum and the centered variant.
   */
  'rmsprop'?: (_pserver_v1_RmsProp__Output | null);
  /**
   * The learning rate and how it changes with `t`. Unset means constant, at the rule's default
   * rate, as in PyTorch: Adam and AdamW 1e-3, Adagrad and RMSProp 1e-2, Adadelta 1.0; SGD (with
   * or without momentum) has none and must set `base`.
   */
  'learningRate': (_pserver_v1_LearningRate__Output | null);
  /**
   * Clip each gradient element to [-clip_value, clip_value] before the update. Unset: no
   * clipping. Must be positive when set.
   */
  'clipValue'?: (number);
  /**
   * Scale the block's gradient by clip_norm / ||g||₂ when its L2 norm exceeds clip_norm (norm of
   * the block being updated; global-norm clipping across a model is the trainer client's job).
   * Unset: no clipping. Must be positive when set. Applied after clip_value.
   */
  'clipNorm'?: (number);
  /**
   * What to do with a gradient holding NaN or ±Infinity.
   */
  'nonFinite': (_pserver_v1_NonFinitePolicy__Output);
  /**
   * The update rule. Unset means `sgd` with its defaults.
   */
  'algorithm'?: "sgd"|"adam"|"adamw"|"adagrad"|"adadelta"|"rmsprop";
  '_clipValue'?: "clipValue";
  '_clipNorm'?: "clipNorm";
}
