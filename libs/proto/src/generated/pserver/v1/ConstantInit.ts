// Original file: proto/pserver/v1/table.proto


/**
 * A constant start.
 */
export interface ConstantInit {
  /**
   * The value.
   */
  'value'?: (number | string);
}

/**
 * A constant start.
 */
export interface ConstantInit__Output {
  /**
   * The value.
   */
  'value': (number);
}
