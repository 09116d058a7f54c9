// Original file: proto/pserver/v1/master.proto


/**
 * Requests the master's status.
 */
export interface StatusRequest {
}

/**
 * Requests the master's status.
 */
export interface StatusRequest__Output {
}
