// Original file: proto/pserver/v1/master.proto


/**
 * FinishInit's reply.
 */
export interface FinishInitResponse {
}

/**
 * FinishInit's reply.
 */
export interface FinishInitResponse__Output {
}
