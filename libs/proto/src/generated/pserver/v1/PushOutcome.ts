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
   * applied again (a retry of a push that had already been applied or accumulated).
   */
  PUSH_OUTCOME_DUPLICATE: 'PUSH_OUTCOME_DUPLICATE',
  /**
   * SYNC: the gradients were added to the open step, which is applied when it closes.
   */
  PUSH_OUTCOME_ACCUMULATED: 'PUSH_OUTCOME_ACCUMULATED',
  /**
   * SYNC: the step had closed without this trainer (K of N contributions, backups): nothing was
   * applied. The trainer goes on with a later step.
   */
  PUSH_OUTCOME_DROPPED_LATE: 'PUSH_OUTCOME_DROPPED_LATE',
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
   * applied again (a retry of a push that had already been applied or accumulated).
   */
  | 'PUSH_OUTCOME_DUPLICATE'
  | 2
  /**
   * SYNC: the gradients were added to the open step, which is applied when it closes.
   */
  | 'PUSH_OUTCOME_ACCUMULATED'
  | 3
  /**
   * SYNC: the step had closed without this trainer (K of N contributions, backups): nothing was
   * applied. The trainer goes on with a later step.
   */
  | 'PUSH_OUTCOME_DROPPED_LATE'
  | 4

/**
 * What became of a push.
 */
export type PushOutcome__Output = typeof PushOutcome[keyof typeof PushOutcome]
