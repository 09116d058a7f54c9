// Original file: proto/pserver/v1/parameter_server.proto


/**
 * Requests the shard's status.
 */
export interface GetShardStatusRequest {
}

/**
 * Requests the shard's status.
 */
export interface GetShardStatusRequest__Output {
}
