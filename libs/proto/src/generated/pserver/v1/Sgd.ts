// Original file: proto/pserver/v1/optimizer.proto


/**
 * SGD: with momentum μ, weight decay λ and learning rate η,
 * v = μ·v − η·(g + λ·p);  p += v                 (momentum, PaddlePaddle's formula)
 * p += μ·v − η·(g + λ·p)  after updating v       (nesterov)
 * With μ = 0 it is p −= η·(g + λ·p).
 */
export interface Sgd {
  /**
   * μ in [0, 1). Default 0 (no momentum slot is kept).
   */
  'momentum'?: (number | string);
  /**
   * Nesterov momentum. Needs momentum > 0.
   */
  'nesterov'?: (boolean);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay'?: (number | string);
}

/**
 * SGD: with momentum μ, weight decay λ and learning rate η,
 * v = μ·v − η·(g + λ·p);  p += v                 (momentum, PaddlePaddle's formula)
 * p += μ·v − η·(g + λ·p)  after updating v       (nesterov)
 * With μ = 0 it is p −= η·(g + λ·p).
 */
export interface Sgd__Output {
  /**
   * μ in [0, 1). Default 0 (no momentum slot is kept).
   */
  'momentum': (number);
  /**
   * Nesterov momentum. Needs momentum > 0.
   */
  'nesterov': (boolean);
  /**
   * λ ≥ 0, L2 weight decay added to the gradient. Default 0.
   */
  'weightDecay': (number);
}
