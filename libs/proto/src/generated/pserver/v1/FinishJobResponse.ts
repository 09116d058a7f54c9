// Original file: proto/pserver/v1/master.proto


/**
 * FinishJob's reply.
 */
export interface FinishJobResponse {
  /**
   * Whether the job is finished (false: it waits for more trainers to ask).
   */
  'finished'?: (boolean);
  /**
   * The names of the trainers that asked so far.
   */
  'asked'?: (string)[];
}

/**
 * FinishJob's reply.
 */
export interface FinishJobResponse__Output {
  /**
   * Whether the job is finished (false: it waits for more trainers to ask).
   */
  'finished': (boolean);
  /**
   * The names of the trainers that asked so far.
   */
  'asked': (string)[];
}
