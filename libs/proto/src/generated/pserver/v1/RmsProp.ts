// Original file: proto/pserver/v1/optimizer.proto


/**
 * RMSProp (Hinton), as in PyTorch:
 * g = g + λ·p;  s = α·s + (1−α)·g²
 * centered: c = α·c + (1−α)·g;  d = sqrt(s − c²) + ε;  otherwise d = sqrt(s) + ε
 * momentum μ > 0: b = μ·b + g/d;  p −= η·b;  otherwise p −= η·g/d
 */
export interface RmsProp {
  /**
   * α in [0, 1), the decay of the squared-gradient average. Default 0.99.
   */
  'alpha'?: (number | string);
  /**
   * ε > 0. Default 1e-8.
   */
  'epsilon'?: (number | string);
  /**
   * μ in [0, 1). Default 0.
   */
  'momentum'?: (number | string);
  /**
   * Normalize by the variance instead of the second moment.
   */
  'centered'?: (boolean);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay'?: (number | string);
  '_alpha'?: "alpha";
  '_epsilon'?: "epsilon";
}

/**
 * RMSProp (Hinton), as in PyTorch:
 * g = g + λ·p;  s = α·s + (1−α)·g²
 * centered: c = α·c + (1−α)·g;  d = sqrt(s − c²) + ε;  otherwise d = sqrt(s) + ε
 * momentum μ > 0: b = μ·b + g/d;  p −= η·b;  otherwise p −= η·g/d
 */
export interface RmsProp__Output {
  /**
   * α in [0, 1), the decay of the squared-gradient average. Default 0.99.
   */
  'alpha'?: (number);
  /**
   * ε > 0. Default 1e-8.
   */
  'epsilon'?: (number);
  /**
   * μ in [0, 1). Default 0.
   */
  'momentum': (number);
  /**
   * Normalize by the variance instead of the second moment.
   */
  'centered': (boolean);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay': (number);
  '_alpha'?: "alpha";
  '_epsilon'?: "epsilon";
}
