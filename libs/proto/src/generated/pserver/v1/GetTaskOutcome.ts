// Original file: proto/pserver/v1/master.proto

/**
 * What GetTask answers.
 */
export const GetTaskOutcome = {
  /**
   * Not set.
   */
  GET_TASK_OUTCOME_UNSPECIFIED: 'GET_TASK_OUTCOME_UNSPECIFIED',
  /**
   * `task` is yours.
   */
  GET_TASK_OUTCOME_TASK: 'GET_TASK_OUTCOME_TASK',
  /**
   * The requested pass has ended: move on to the next one.
   */
  GET_TASK_OUTCOME_PASS_OVER: 'GET_TASK_OUTCOME_PASS_OVER',
  /**
   * The requested pass has not begun yet: wait and ask again.
   */
  GET_TASK_OUTCOME_PASS_NOT_STARTED: 'GET_TASK_OUTCOME_PASS_NOT_STARTED',
  /**
   * Every remaining task of the pass is held by a trainer; some may come back: ask again.
   */
  GET_TASK_OUTCOME_NO_TASK_AVAILABLE: 'GET_TASK_OUTCOME_NO_TASK_AVAILABLE',
  /**
   * No dataset has been set yet: ask again.
   */
  GET_TASK_OUTCOME_NO_DATASET: 'GET_TASK_OUTCOME_NO_DATASET',
} as const;

/**
 * What GetTask answers.
 */
export type GetTaskOutcome =
  /**
   * Not set.
   */
  | 'GET_TASK_OUTCOME_UNSPECIFIED'
  | 0
  /**
   * `task` is yours.
   */
  | 'GET_TASK_OUTCOME_TASK'
  | 1
  /**
   * The requested pass has ended: move on to the next one.
   */
  | 'GET_TASK_OUTCOME_PASS_OVER'
  | 2
  /**
   * The requested pass has not begun yet: wait and ask again.
   */
  | 'GET_TASK_OUTCOME_PASS_NOT_STARTED'
  | 3
  /**
   * Every remaining task of the pass is held by a trainer; some may come back: ask again.
   */
  | 'GET_TASK_OUTCOME_NO_TASK_AVAILABLE'
  | 4
  /**
   * No dataset has been set yet: ask again.
   */
  | 'GET_TASK_OUTCOME_NO_DATASET'
  | 5

/**
 * What GetTask answers.
 */
export type GetTaskOutcome__Output = typeof GetTaskOutcome[keyof typeof GetTaskOutcome]
