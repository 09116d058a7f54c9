// Original file: proto/pserver/v1/table.proto


/**
 * An approximately normal start.
 */
export interface NormalInit {
  /**
   * The mean.
   */
  'mean'?: (number | string);
  /**
   * The standard deviation, ≥ 0.
   */
  'stddev'?: (number | string);
}

/**
 * An approximately normal start.
 */
export interface NormalInit__Output {
  /**
   * The mean.
   */
  'mean': (number);
  /**
   * The standard deviation, ≥ 0.
   */
  'stddev': (number);
}
