// Original file: proto/pserver/v1/table.proto


/**
 * Element-wise row Adagrad.
 */
export interface RowAdagrad {
  /**
   * ε. Default 1e-10 (PyTorch's).
   */
  'epsilon'?: (number | string);
  /**
   * The accumulators' start value.
   */
  'initialAccumulator'?: (number | string);
  '_epsilon'?: "epsilon";
}

/**
 * Element-wise row Adagrad.
 */
export interface RowAdagrad__Output {
  /**
   * ε. Default 1e-10 (PyTorch's).
   */
  'epsilon'?: (number);
  /**
   * The accumulators' start value.
   */
  'initialAccumulator': (number);
  '_epsilon'?: "epsilon";
}
