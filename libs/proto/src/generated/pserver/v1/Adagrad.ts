// Original file: proto/pserver/v1/optimizer.proto


/**
 * Adagrad, descending the gradient (PaddlePaddle's `+=` ascended it):
 * a += g²;  p −= η · g / (sqrt(a) + ε)
 * with g = g + λ·p first when weight_decay λ is set.
 */
export interface Adagrad {
  /**
   * ε > 0. Default 1e-10.
   */
  'epsilon'?: (number | string);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay'?: (number | string);
  /**
   * The accumulator's starting value a₀ ≥ 0. Default 0.
   */
  'initialAccumulator'?: (number | string);
  '_epsilon'?: "epsilon";
}

/**
 * Adagrad, descending the gradient (PaddlePaddle's `+=` ascended it):
 * a += g²;  p −= η · g / (sqrt(a) + ε)
 * with g = g + λ·p first when weight_decay λ is set.
 */
export interface Adagrad__Output {
  /**
   * ε > 0. Default 1e-10.
   */
  'epsilon'?: (number);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay': (number);
  /**
   * The accumulator's starting value a₀ ≥ 0. Default 0.
   */
  'initialAccumulator': (number);
  '_epsilon'?: "epsilon";
}
