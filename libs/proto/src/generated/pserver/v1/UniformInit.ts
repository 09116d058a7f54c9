// Original file: proto/pserver/v1/table.proto


/**
 * A uniform start.
 */
export interface UniformInit {
  /**
   * The lower bound.
   */
  'low'?: (number | string);
  /**
   * The upper bound, above `low`.
   */
  'high'?: (number | string);
}

/**
 * A uniform start.
 */
export interface UniformInit__Output {
  /**
   * The lower bound.
   */
  'low': (number);
  /**
   * The upper bound, above `low`.
   */
  'high': (number);
}
