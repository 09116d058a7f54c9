// Original file: proto/pserver/v1/parameter_server.proto


/**
 * Asks the pserver to hand its role over and stop.
 */
export interface DrainRequest {
}

/**
 * Asks the pserver to hand its role over and stop.
 */
export interface DrainRequest__Output {
}
