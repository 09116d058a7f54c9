// Original file: proto/pserver/v1/master.proto

/**
 * What BeginInit tells a trainer.
 */
export const InitDecision = {
  /**
   * Not set.
   */
  INIT_DECISION_UNSPECIFIED: 'INIT_DECISION_UNSPECIFIED',
  /**
   * This trainer initializes: InitParam on every shard, FinishInitParams, then FinishInit.
   */
  INIT_DECISION_INITIALIZE: 'INIT_DECISION_INITIALIZE',
  /**
   * Another trainer is initializing: ask again later (or wait for the view's `initialized`).
   */
  INIT_DECISION_WAIT: 'INIT_DECISION_WAIT',
  /**
   * The parameters are initialized.
   */
  INIT_DECISION_DONE: 'INIT_DECISION_DONE',
} as const;

/**
 * What BeginInit tells a trainer.
 */
export type InitDecision =
  /**
   * Not set.
   */
  | 'INIT_DECISION_UNSPECIFIED'
  | 0
  /**
   * This trainer initializes: InitParam on every shard, FinishInitParams, then FinishInit.
   */
  | 'INIT_DECISION_INITIALIZE'
  | 1
  /**
   * Another trainer is initializing: ask again later (or wait for the view's `initialized`).
   */
  | 'INIT_DECISION_WAIT'
  | 2
  /**
   * The parameters are initialized.
   */
  | 'INIT_DECISION_DONE'
  | 3

/**
 * What BeginInit tells a trainer.
 */
export type InitDecision__Output = typeof InitDecision[keyof typeof InitDecision]
