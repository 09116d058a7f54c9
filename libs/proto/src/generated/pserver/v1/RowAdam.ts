// Original file: proto/pserver/v1/table.proto

import type { AdamBiasCorrection as _pserver_v1_AdamBiasCorrection, AdamBiasCorrection__Output as _pserver_v1_AdamBiasCorrection__Output } from '../../pserver/v1/AdamBiasCorrection';

/**
 * Row Adam:
 * m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  w −= η · (m / (1−β1ᵗ)) / (sqrt(v / (1−β2ᵗ)) + ε)
 * with β1ᵗ, β2ᵗ kept as running products (never a pow call, so every language agrees).
 */
export interface RowAdam {
  /**
   * β1. Default 0.9.
   */
  'beta1'?: (number | string);
  /**
   * β2. Default 0.999.
   */
  'beta2'?: (number | string);
  /**
   * ε. Default 1e-8.
   */
  'epsilon'?: (number | string);
  /**
   * Whose step t is.
   */
  'biasCorrection'?: (_pserver_v1_AdamBiasCorrection);
  '_beta1'?: "beta1";
  '_beta2'?: "beta2";
  '_epsilon'?: "epsilon";
}

/**
 * Row Adam:
 * m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  w −= η · (m / (1−β1ᵗ)) / (sqrt(v / (1−β2ᵗ)) + ε)
 * with β1ᵗ, β2ᵗ kept as running products (never a pow call, so every language agrees).
 */
export interface RowAdam__Output {
  /**
   * β1. Default 0.9.
   */
  'beta1'?: (number);
  /**
   * β2. Default 0.999.
   */
  'beta2'?: (number);
  /**
   * ε. Default 1e-8.
   */
  'epsilon'?: (number);
  /**
   * Whose step t is.
   */
  'biasCorrection': (_pserver_v1_AdamBiasCorrection__Output);
  '_beta1'?: "beta1";
  '_beta2'?: "beta2";
  '_epsilon'?: "epsilon";
}
