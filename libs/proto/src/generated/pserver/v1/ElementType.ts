// Original file: proto/pserver/v1/tensor.proto

/**
 * The type of every element of a tensor's content. The numbering differs from PaddlePaddle's
 * (which started at INT32 = 0) so that a missing type is UNSPECIFIED, never silently INT32.
 */
export const ElementType = {
  /**
   * Not set: rejected wherever a type is required.
   */
  ELEMENT_TYPE_UNSPECIFIED: 'ELEMENT_TYPE_UNSPECIFIED',
  /**
   * 32-bit signed integers. Stored and returned; gradients for them are rejected.
   */
  ELEMENT_TYPE_INT32: 'ELEMENT_TYPE_INT32',
  /**
   * 32-bit unsigned integers. Stored and returned; gradients for them are rejected.
   */
  ELEMENT_TYPE_UINT32: 'ELEMENT_TYPE_UINT32',
  /**
   * 64-bit signed integers. Stored and returned; gradients for them are rejected.
   */
  ELEMENT_TYPE_INT64: 'ELEMENT_TYPE_INT64',
  /**
   * 64-bit unsigned integers. Stored and returned; gradients for them are rejected.
   */
  ELEMENT_TYPE_UINT64: 'ELEMENT_TYPE_UINT64',
  /**
   * IEEE 754 binary32. Optimized.
   */
  ELEMENT_TYPE_FLOAT32: 'ELEMENT_TYPE_FLOAT32',
  /**
   * IEEE 754 binary64. Optimized.
   */
  ELEMENT_TYPE_FLOAT64: 'ELEMENT_TYPE_FLOAT64',
  /**
   * IEEE 754 binary16. Reserved: stored and returned, not optimized until supported.
   */
  ELEMENT_TYPE_FLOAT16: 'ELEMENT_TYPE_FLOAT16',
  /**
   * bfloat16 (the upper half of a binary32). Reserved: stored and returned, not optimized until
   * supported.
   */
  ELEMENT_TYPE_BFLOAT16: 'ELEMENT_TYPE_BFLOAT16',
} as const;

/**
 * The type of every element of a tensor's content. The numbering differs from PaddlePaddle's
 * (which started at INT32 = 0) so that a missing type is UNSPECIFIED, never silently INT32.
 */
export type ElementType =
  /**
   * Not set: rejected wherever a type is required.
   */
  | 'ELEMENT_TYPE_UNSPECIFIED'
  | 0
  /**
   * 32-bit signed integers. Stored and returned; gradients for them are rejected.
   */
  | 'ELEMENT_TYPE_INT32'
  | 1
  /**
   * 32-bit unsigned integers. Stored and returned; gradients for them are rejected.
   */
  | 'ELEMENT_TYPE_UINT32'
  | 2
  /**
   * 64-bit signed integers. Stored and returned; gradients for them are rejected.
   */
  | 'ELEMENT_TYPE_INT64'
  | 3
  /**
   * 64-bit unsigned integers. Stored and returned; gradients for them are rejected.
   */
  | 'ELEMENT_TYPE_UINT64'
  | 4
  /**
   * IEEE 754 binary32. Optimized.
   */
  | 'ELEMENT_TYPE_FLOAT32'
  | 5
  /**
   * IEEE 754 binary64. Optimized.
   */
  | 'ELEMENT_TYPE_FLOAT64'
  | 6
  /**
   * IEEE 754 binary16. Reserved: stored and returned, not optimized until supported.
   */
  | 'ELEMENT_TYPE_FLOAT16'
  | 7
  /**
   * bfloat16 (the upper half of a binary32). Reserved: stored and returned, not optimized until
   * supported.
   */
  | 'ELEMENT_TYPE_BFLOAT16'
  | 8

/**
 * The type of every element of a tensor's content. The numbering differs from PaddlePaddle's
 * (which started at INT32 = 0) so that a missing type is UNSPECIFIED, never silently INT32.
 */
export type ElementType__Output = typeof ElementType[keyof typeof ElementType]
