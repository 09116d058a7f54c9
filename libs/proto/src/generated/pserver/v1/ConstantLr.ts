// Original file: proto/pserver/v1/optimizer.proto


/**
 * A constant learning rate.
 */
export interface ConstantLr {
}

/**
 * A constant learning rate.
 */
export interface ConstantLr__Output {
}
