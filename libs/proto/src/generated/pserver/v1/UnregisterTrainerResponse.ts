// Original file: proto/pserver/v1/master.proto


/**
 * UnregisterTrainer's reply.
 */
export interface UnregisterTrainerResponse {
}

/**
 * UnregisterTrainer's reply.
 */
export interface UnregisterTrainerResponse__Output {
}
