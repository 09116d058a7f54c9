// Original file: proto/pserver/v1/table.proto


/**
 * Admission by count.
 */
export interface CountingAdmission {
  /**
   * Occurrences an id needs, ≥ 1.
   */
  'minCount'?: (number);
}

/**
 * Admission by count.
 */
export interface CountingAdmission__Output {
  /**
   * Occurrences an id needs, ≥ 1.
   */
  'minCount': (number);
}
