// Original file: proto/pserver/v1/master.proto


/**
 * Registers a trainer.
 */
export interface RegisterTrainerRequest {
  /**
   * A free-form name for logs and Status (e.g. the host or pod name).
   */
  'name'?: (string);
  /**
   * A client that reads and never takes steps (an evaluator, a tool): SYNC and SSP steps do not
   * wait for it, and the pservers refuse its step pushes (PSERVER_NOT_IN_ROSTER).
   */
  'observer'?: (boolean);
}

/**
 * Registers a trainer.
 */
export interface RegisterTrainerRequest__Output {
  /**
   * A free-form name for logs and Status (e.g. the host or pod name).
   */
  'name': (string);
  /**
   * A client that reads and never takes steps (an evaluator, a tool): SYNC and SSP steps do not
   * wait for it, and the pservers refuse its step pushes (PSERVER_NOT_IN_ROSTER).
   */
  'observer': (boolean);
}
