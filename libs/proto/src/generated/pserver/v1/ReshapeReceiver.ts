// Original file: proto/pserver/v1/master.proto


/**
 * Who receives one index's slices in a live change of the shard count.
 */
export interface ReshapeReceiver {
  /**
   * The index of the new count.
   */
  'index'?: (number);
  /**
   * The pserver's member name.
   */
  'member'?: (string);
}

/**
 * Who receives one index's slices in a live change of the shard count.
 */
export interface ReshapeReceiver__Output {
  /**
   * The index of the new count.
   */
  'index': (number);
  /**
   * The pserver's member name.
   */
  'member': (string);
}
