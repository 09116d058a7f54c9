// Original file: proto/pserver/v1/replication.proto


/**
 * ReplicaLoaded's reply.
 */
export interface ReplicaLoadedResponse {
  /**
   * Whether the replica is in sync already: it holds every push the primary acknowledged, and the
   * primary waits for it from now on. Otherwise a later forward says so (`in_sync`).
   */
  'inSync'?: (boolean);
}

/**
 * ReplicaLoaded's reply.
 */
export interface ReplicaLoadedResponse__Output {
  /**
   * Whether the replica is in sync already: it holds every push the primary acknowledged, and the
   * primary waits for it from now on. Otherwise a later forward says so (`in_sync`).
   */
  'inSync': (boolean);
}
