// Original file: proto/pserver/v1/master.proto


/**
 * A spare pserver: waiting for an index or a replica to keep.
 */
export interface SparePserver {
  /**
   * Its member name.
   */
  'member'?: (string);
  /**
   * Its gRPC address.
   */
  'address'?: (string);
}

/**
 * A spare pserver: waiting for an index or a replica to keep.
 */
export interface SparePserver__Output {
  /**
   * Its member name.
   */
  'member': (string);
  /**
   * Its gRPC address.
   */
  'address': (string);
}
