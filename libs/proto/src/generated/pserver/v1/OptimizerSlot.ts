// Original file: proto/pserver/v1/optimizer.proto


/**
 * One per-element slot of an optimizer's state.
 */
export interface OptimizerSlot {
  /**
   * The slot's name, e.g. "momentum", "m", "v", "accumulator".
   */
  'name'?: (string);
  /**
   * Raw little-endian bytes, same element type and length as the parameter.
   */
  'content'?: (Buffer | Uint8Array | string);
}

/**
 * One per-element slot of an optimizer's state.
 */
export interface OptimizerSlot__Output {
  /**
   * The slot's name, e.g. "momentum", "m", "v", "accumulator".
   */
  'name': (string);
  /**
   * Raw little-endian bytes, same element type and length as the parameter.
   */
  'content': (Buffer);
}
