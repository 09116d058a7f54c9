// Original file: proto/pserver/v1/table.proto


/**
 * The gradients of one table's rows in a push. Duplicate ids are summed, in order of first
 * appearance, before the update.
 */
export interface SparseGrad {
  /**
   * The table.
   */
  'table'?: (string);
  /**
   * The ids, int64 little-endian, 8 bytes each; every id placed on this shard.
   */
  'ids'?: (Buffer | Uint8Array | string);
  /**
   * The gradient rows, ids × dim float32 little-endian.
   */
  'grads'?: (Buffer | Uint8Array | string);
  /**
   * Optional: occurrences of each id in the batch, uint32 little-endian (admission counts them;
   * default 1 each).
   */
  'counts'?: (Buffer | Uint8Array | string);
}

/**
 * The gradients of one table's rows in a push. Duplicate ids are summed, in order of first
 * appearance, before the update.
 */
export interface SparseGrad__Output {
  /**
   * The table.
   */
  'table': (string);
  /**
   * The ids, int64 little-endian, 8 bytes each; every id placed on this shard.
   */
  'ids': (Buffer);
  /**
   * The gradient rows, ids × dim float32 little-endian.
   */
  'grads': (Buffer);
  /**
   * Optional: occurrences of each id in the batch, uint32 little-endian (admission counts them;
   * default 1 each).
   */
  'counts': (Buffer);
}
