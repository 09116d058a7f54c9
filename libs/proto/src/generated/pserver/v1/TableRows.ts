// Original file: proto/pserver/v1/checkpoint.proto


/**
 * A section of a table's rows: parallel columns, row k at index k of each.
 */
export interface TableRows {
  /**
   * The table.
   */
  'table'?: (string);
  /**
   * float32 values per row: dim, then the row optimizer's state.
   */
  'stride'?: (number);
  /**
   * The ids, int64 little-endian.
   */
  'ids'?: (Buffer | Uint8Array | string);
  /**
   * The rows, stride float32 little-endian each, bit-exact.
   */
  'values'?: (Buffer | Uint8Array | string);
  /**
   * The table step of each row's last push, uint32 little-endian.
   */
  'lastSeen'?: (Buffer | Uint8Array | string);
  /**
   * Occurrences pushed per row (saturating), uint32 little-endian.
   */
  'counts'?: (Buffer | Uint8Array | string);
}

/**
 * A section of a table's rows: parallel columns, row k at index k of each.
 */
export interface TableRows__Output {
  /**
   * The table.
   */
  'table': (string);
  /**
   * float32 values per row: dim, then the row optimizer's state.
   */
  'stride': (number);
  /**
   * The ids, int64 little-endian.
   */
  'ids': (Buffer);
  /**
   * The rows, stride float32 little-endian each, bit-exact.
   */
  'values': (Buffer);
  /**
   * The table step of each row's last push, uint32 little-endian.
   */
  'lastSeen': (Buffer);
  /**
   * Occurrences pushed per row (saturating), uint32 little-endian.
   */
  'counts': (Buffer);
}
