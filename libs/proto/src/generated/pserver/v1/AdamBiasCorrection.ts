// Original file: proto/pserver/v1/table.proto

/**
 * Whose step a row Adam corrects its bias by.
 */
export const AdamBiasCorrection = {
  /**
   * Not set: the table's step.
   */
  ADAM_BIAS_CORRECTION_UNSPECIFIED: 'ADAM_BIAS_CORRECTION_UNSPECIFIED',
  /**
   * The table's step, shared by every row (TensorFlow's LazyAdam).
   */
  ADAM_BIAS_CORRECTION_TABLE_STEP: 'ADAM_BIAS_CORRECTION_TABLE_STEP',
  /**
   * The row's own count of updates, kept in the row (PaddlePaddle's SparseAdamSGDRule).
   */
  ADAM_BIAS_CORRECTION_ROW_STEP: 'ADAM_BIAS_CORRECTION_ROW_STEP',
} as const;

/**
 * Whose step a row Adam corrects its bias by.
 */
export type AdamBiasCorrection =
  /**
   * Not set: the table's step.
   */
  | 'ADAM_BIAS_CORRECTION_UNSPECIFIED'
  | 0
  /**
   * The table's step, shared by every row (TensorFlow's LazyAdam).
   */
  | 'ADAM_BIAS_CORRECTION_TABLE_STEP'
  | 1
  /**
   * The row's own count of updates, kept in the row (PaddlePaddle's SparseAdamSGDRule).
   */
  | 'ADAM_BIAS_CORRECTION_ROW_STEP'
  | 2

/**
 * Whose step a row Adam corrects its bias by.
 */
export type AdamBiasCorrection__Output = typeof AdamBiasCorrection[keyof typeof AdamBiasCorrection]
