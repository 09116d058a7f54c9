// Original file: proto/pserver/v1/optimizer.proto


/**
 * Adam (Kingma and Ba) with bias correction and epsilon outside the square root:
 * m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
 * p −= η · (m / (1−β1ᵗ)) / (sqrt(v / (1−β2ᵗ)) + ε)
 * with g = g + λ·p first when weight_decay λ is set (coupled L2, as in the original paper).
 */
export interface Adam {
  /**
   * β1 in [0, 1). Default 0.9.
   */
  'beta1'?: (number | string);
  /**
   * β2 in [0, 1). Default 0.999.
   */
  'beta2'?: (number | string);
  /**
   * ε > 0. Default 1e-8.
   */
  'epsilon'?: (number | string);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay'?: (number | string);
  '_beta1'?: "beta1";
  '_beta2'?: "beta2";
  '_epsilon'?: "epsilon";
}

/**
 * Adam (Kingma and Ba) with bias correction and epsilon outside the square root:
 * m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
 * p −= η · (m / (1−β1ᵗ)) / (sqrt(v / (1−β2ᵗ)) + ε)
 * with g = g + λ·p first when weight_decay λ is set (coupled L2, as in the original paper).
 */
export interface Adam__Output {
  /**
   * β1 in [0, 1). Default 0.9.
   */
  'beta1'?: (number);
  /**
   * β2 in [0, 1). Default 0.999.
   */
  'beta2'?: (number);
  /**
   * ε > 0. Default 1e-8.
   */
  'epsilon'?: (number);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay': (number);
  '_beta1'?: "beta1";
  '_beta2'?: "beta2";
  '_epsilon'?: "epsilon";
}
