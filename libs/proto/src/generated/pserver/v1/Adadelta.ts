// Original file: proto/pserver/v1/optimizer.proto


/**
 * Adadelta (Zeiler), PaddlePaddle's formula:
 * a = ρ·a + (1−ρ)·g²;  u = sqrt(d + ε) / sqrt(a + ε) · g;  d = ρ·d + (1−ρ)·u²
 * p −= η·(u + λ·p)
 */
export interface Adadelta {
  /**
   * ρ in [0, 1). Default 0.9.
   */
  'rho'?: (number | string);
  /**
   * ε > 0. Default 1e-5.
   */
  'epsilon'?: (number | string);
  /**
   * λ ≥ 0, weight decay. Default 0.
   */
  'weightDecay'?: (number | string);
  '_rho'?: "rho";
  '_epsilon'?: "epsilon";
}

/**
 * Adadelta (Zeiler), PaddlePaddle's formula:
 * a = ρ·a + (1−ρ)·g²;  u = sqrt(d + ε) / sqrt(a + ε) · g;  d = ρ·d + (1−ρ)·u²
 * p −= η·(u + λ·p)
 */
export interface Adadelta__Output {
  /**
   * ρ in [0, 1). Default 0.9.
   */
  'rho'?: (number);
  /**
   * ε > 0. Default 1e-5.
   */
  'epsilon'?: (number);
  /**
   * λ ≥ 0, weight decay. Default 0.
   */
  'weightDecay': (number);
  '_rho'?: "rho";
  '_epsilon'?: "epsilon";
}
