// Original file: proto/pserver/v1/master.proto


/**
 * TaskFinished's reply.
 */
export interface TaskFinishedResponse {
}

/**
 * TaskFinished's reply.
 */
export interface TaskFinishedResponse__Output {
}
