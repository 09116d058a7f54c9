// Original file: proto/pserver/v1/parameter_server.proto


/**
 * Requests a checkpoint.
 */
export interface SaveCheckpointRequest {
}

/**
 * Requests a checkpoint.
 */
export interface SaveCheckpointRequest__Output {
}
