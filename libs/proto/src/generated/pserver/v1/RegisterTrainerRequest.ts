// Original file: proto/pserver/v1/master.proto


/**
 * Registers a trainer.
 */
export interface RegisterTrainerRequest {
  /**
   * A free-form name for logs and Status (e.g. the host or pod name).
   */
  'name'?: (string);
}

/**
 * Registers a trainer.
 */
export interface RegisterTrainerRequest__Output {
  /**
   * A free-form name for logs and Status (e.g. the host or pod name).
   */
  'name': (string);
}
