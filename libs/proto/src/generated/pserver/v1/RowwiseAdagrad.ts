// Original file: proto/pserver/v1/table.proto


/**
 * Row-wise Adagrad (one accumulator per row; FBGEMM's rule, not PaddlePaddle's
 * SparseAdaGradSGDRule, which uses the accumulator from before the step and no ε).
 */
export interface RowwiseAdagrad {
  /**
   * ε. Default 1e-10.
   */
  'epsilon'?: (number | string);
  /**
   * The accumulator's start value.
   */
  'initialAccumulator'?: (number | string);
  '_epsilon'?: "epsilon";
}

/**
 * Row-wise Adagrad (one accumulator per row; FBGEMM's rule, not PaddlePaddle's
 * SparseAdaGradSGDRule, which uses the accumulator from before the step and no ε).
 */
export interface RowwiseAdagrad__Output {
  /**
   * ε. Default 1e-10.
   */
  'epsilon'?: (number);
  /**
   * The accumulator's start value.
   */
  'initialAccumulator': (number);
  '_epsilon'?: "epsilon";
}
