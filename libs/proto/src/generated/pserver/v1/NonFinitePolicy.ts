// Original file: proto/pserver/v1/optimizer.proto

/**
 * What happens to a gradient that holds NaN or ±Infinity. Checked before any byte changes.
 */
export const NonFinitePolicy = {
  /**
   * Reject the whole push with INVALID_ARGUMENT, naming the tensor: nothing is applied.
   */
  NON_FINITE_POLICY_REJECT: 'NON_FINITE_POLICY_REJECT',
  /**
   * Skip this tensor's update (the push's other tensors are applied) and list it in the reply.
   */
  NON_FINITE_POLICY_SKIP: 'NON_FINITE_POLICY_SKIP',
} as const;

/**
 * What happens to a gradient that holds NaN or ±Infinity. Checked before any byte changes.
 */
export type NonFinitePolicy =
  /**
   * Reject the whole push with INVALID_ARGUMENT, naming the tensor: nothing is applied.
   */
  | 'NON_FINITE_POLICY_REJECT'
  | 0
  /**
   * Skip this tensor's update (the push's other tensors are applied) and list it in the reply.
   */
  | 'NON_FINITE_POLICY_SKIP'
  | 1

/**
 * What happens to a gradient that holds NaN or ±Infinity. Checked before any byte changes.
 */
export type NonFinitePolicy__Output = typeof NonFinitePolicy[keyof typeof NonFinitePolicy]
