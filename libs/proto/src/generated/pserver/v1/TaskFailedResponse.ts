// Original file: proto/pserver/v1/master.proto


/**
 * TaskFailed's reply.
 */
export interface TaskFailedResponse {
}

/**
 * TaskFailed's reply.
 */
export interface TaskFailedResponse__Output {
}
