// Original file: proto/pserver/v1/table.proto

/**
 * What a pull of an id without a row reads.
 */
export const PullMissing = {
  /**
   * Not set: the row's init value.
   */
  PULL_MISSING_UNSPECIFIED: 'PULL_MISSING_UNSPECIFIED',
  /**
   * The row's init value (what a push would start from).
   */
  PULL_MISSING_INIT: 'PULL_MISSING_INIT',
  /**
   * Zeros.
   */
  PULL_MISSING_ZERO: 'PULL_MISSING_ZERO',
} as const;

/**
 * What a pull of an id without a row reads.
 */
export type PullMissing =
  /**
   * Not set: the row's init value.
   */
  | 'PULL_MISSING_UNSPECIFIED'
  | 0
  /**
   * The row's init value (what a push would start from).
   */
  | 'PULL_MISSING_INIT'
  | 1
  /**
   * Zeros.
   */
  | 'PULL_MISSING_ZERO'
  | 2

/**
 * What a pull of an id without a row reads.
 */
export type PullMissing__Output = typeof PullMissing[keyof typeof PullMissing]
