// Original file: proto/pserver/v1/table.proto


/**
 * Admission by probability.
 */
export interface ProbabilisticAdmission {
  /**
   * In (0, 1].
   */
  'probability'?: (number | string);
}

/**
 * Admission by probability.
 */
export interface ProbabilisticAdmission__Output {
  /**
   * In (0, 1].
   */
  'probability': (number);
}
