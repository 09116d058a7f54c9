// Original file: proto/pserver/v1/master.proto


/**
 * Requests the cluster view.
 */
export interface GetClusterViewRequest {
}

/**
 * Requests the cluster view.
 */
export interface GetClusterViewRequest__Output {
}
