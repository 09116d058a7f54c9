// Original file: proto/pserver/v1/optimizer.proto


/**
 * η = max(η₀ − a·t, b).
 */
export interface LinearLr {
  /**
   * a ≥ 0, the decrease per update.
   */
  'decayA'?: (number | string);
  /**
   * b ≥ 0, the floor.
   */
  'decayB'?: (number | string);
}

/**
 * η = max(η₀ − a·t, b).
 */
export interface LinearLr__Output {
  /**
   * a ≥ 0, the decrease per update.
   */
  'decayA': (number);
  /**
   * b ≥ 0, the floor.
   */
  'decayB': (number);
}
