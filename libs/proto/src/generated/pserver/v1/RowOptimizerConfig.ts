// Original file: proto/pserver/v1/table.proto

import type { RowSgd as _pserver_v1_RowSgd, RowSgd__Output as _pserver_v1_RowSgd__Output } from '../../pserver/v1/RowSgd';
import type { RowAdagrad as _pserver_v1_RowAdagrad, RowAdagrad__Output as _pserver_v1_RowAdagrad__Output } from '../../pserver/v1/RowAdagrad';
import type { RowwiseAdagrad as _pserver_v1_RowwiseAdagrad, RowwiseAdagrad__Output as _pserver_v1_RowwiseAdagrad__Output } from '../../pserver/v1/RowwiseAdagrad';
import type { RowAdam as _pserver_v1_RowAdam, RowAdam__Output as _pserver_v1_RowAdam__Output } from '../../pserver/v1/RowAdam';
import type { LearningRate as _pserver_v1_LearningRate, LearningRate__Output as _pserver_v1_LearningRate__Output } from '../../pserver/v1/LearningRate';
import type { NonFinitePolicy as _pserver_v1_NonFinitePolicy, NonFinitePolicy__Output as _pserver_v1_NonFinitePolicy__Output } from '../../pserver/v1/NonFinitePolicy';

/**
 * How a row's values change with a pushed gradient row g. `t` is the table's step: the number of
 * pushes that updated the table on this shard, this one included.
 */
export interface RowOptimizerConfig {
  /**
   * w −= η·g.
   */
  'sgd'?: (_pserver_v1_RowSgd | null);
  /**
   * Element-wise Adagrad: a += g²; w −= η·g / (sqrt(a) + ε).
   */
  'adagrad'?: (_pserver_v1_RowAdagrad | null);
  /**
   * Row-wise Adagrad: one accumulator per row, a += mean(g²); w −= η·g / (sqrt(a) + ε).
   */
  'rowwiseAdagrad'?: (_pserver_v1_RowwiseAdagrad | null);
  /**
   * Adam, with bias correction by the table's step or by the row's own.
   */
  'adam'?: (_pserver_v1_RowAdam | null);
  /**
   * The learning rate η and how it changes with the table's step t, as for tensors. Unset base:
   * as in PyTorch, Adagrad and row-wise Adagrad 1e-2, Adam 1e-3; SGD has none and must set it
   * (INVALID_ARGUMENT, OPTIMIZER_INVALID_CONFIG).
   */
  'learningRate'?: (_pserver_v1_LearningRate | null);
  /**
   * What to do with a gradient row holding NaN or ±Infinity: only NON_FINITE_POLICY_REJECT (the
   * whole push is refused) is supported for tables.
   */
  'nonFinite'?: (_pserver_v1_NonFinitePolicy);
  /**
   * The update rule. Unset: SGD.
   */
  'algorithm'?: "sgd"|"adagrad"|"rowwiseAdagrad"|"adam";
}

/**
 * How a row's values change with a pushed gradient row g. `t` is the table's step: the number of
 * pushes that updated the table on this shard, this one included.
 */
export interface RowOptimizerConfig__Output {
  /**
   * w −= η·g.
   */
  'sgd'?: (_pserver_v1_RowSgd__Output | null);
  /**
   * Element-wise Adagrad: a += g²; w −= η·g / (sqrt(a) + ε).
   */
  'adagrad'?: (_pserver_v1_RowAdagrad__Output | null);
  /**
   * Row-wise Adagrad: one accumulator per row, a += mean(g²); w −= η·g / (sqrt(a) + ε).
   */
  'rowwiseAdagrad'?: (_pserver_v1_RowwiseAdagrad__Output | null);
  /**
   * Adam, with bias correction by the table's step or by the row's own.
   */
  'adam'?: (_pserver_v1_RowAdam__Output | null);
  /**
   * The learning rate η and how it changes with the table's step t, as for tensors. Unset base:
   * as in PyTorch, Adagrad and row-wise Adagrad 1e-2, Adam 1e-3; SGD has none and must set it
   * (INVALID_ARGUMENT, OPTIMIZER_INVALID_CONFIG).
   */
  'learningRate': (_pserver_v1_LearningRate__Output | null);
  /**
   * What to do with a gradient row holding NaN or ±Infinity: only NON_FINITE_POLICY_REJECT (the
   * whole push is refused) is supported for tables.
   */
  'nonFinite': (_pserver_v1_NonFinitePolicy__Output);
  /**
   * The update rule. Unset: SGD.
   */
  'algorithm'?: "sgd"|"adagrad"|"rowwiseAdagrad"|"adam";
}
