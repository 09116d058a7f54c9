// Original file: proto/pserver/v1/parameter_server.proto

/**
 * What became of a push.
 */
export const PushOutcome = {
  /**
   * Not set.
   */
  PUSH_OUTCOME_UNSPECIFIED: 'PUSH_OUTCOME_UNSPECIFIED',
  /**
   * The gradients were applied.
   */
  PUSH_OUTCOME_APPLIED: 'PUSH_OUTCOME_APPLIED',
  /**
   * The step was not above the trainer's last applied step on this shard: acknowledged, not
   * applied again (a retry of a push that had already been applied).
   */
  PUSH_OUTCOME_DUPLICATE: 'PUSH_OUTCOME_DUPLICATE',
} as const;

/**
 * What became of a push.
 */
export type PushOutcome =
  /**
   * Not set.
   */
  | 'PUSH_OUTCOME_UNSPECIFIED'
  | 0
  /**
   * The gradients were applied.
   */
  | 'PUSH_OUTCOME_APPLIED'
  | 1
  /**
   * The step was not above the trainer's last applied step on this shard: acknowledged, not
   * applied again (a retry of a push that had already been applied).
   */
  | 'PUSH_OUTCOME_DUPLICATE'
  | 2

/**
 * What became of a push.
 */
export type PushOutcome__Output = typeof PushOutcome[keyof typeof PushOutcome]
