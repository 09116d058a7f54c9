// Original file: proto/pserver/v1/optimizer.proto


/**
 * AdamW (Loshchilov and Hutter): Adam whose weight decay is decoupled from the gradient:
 * p −= η·λ·p, then the Adam step on the unmodified gradient.
 */
export interface AdamW {
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
   * λ ≥ 0, decoupled weight decay. Default 0.01.
   */
  'weightDecay'?: (number | string);
  '_beta1'?: "beta1";
  '_beta2'?: "beta2";
  '_epsilon'?: "epsilon";
  '_weightDecay'?: "weightDecay";
}

/**
 * AdamW (Loshchilov and Hutter): Adam whose weight decay is decoupled from the gradient:
 * p −= η·λ·p, then the Adam step on the unmodified gradient.
 */
export interface AdamW__Output {
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
   * λ ≥ 0, decoupled weight decay. Default 0.01.
   */
  'weightDecay'?: (number);
  '_beta1'?: "beta1";
  '_beta2'?: "beta2";
  '_epsilon'?: "epsilon";
  '_weightDecay'?: "weightDecay";
}
