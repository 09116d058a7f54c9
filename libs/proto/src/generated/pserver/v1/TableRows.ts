// Original file: proto/pserver/v1/checkpoint.proto


/**
 * A section of a table's rows: parallel columns, row k at index k of each. A table's rows are in
 * ascending bucket order over its sections (a bucket may continue into the next section).
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
  /**
   * The bucket of the section's first row.
   */
  'firstBucket'?: (number);
  /**
   * The bucket of its last row.
   */
  'lastBucket'?: (number);
}

/**
 * A section of a table's rows: parallel columns, row k at index k of each. A table's rows are in
 * ascending bucket order over its sections (a bucket may continue into the next section).
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
  /**
   * The bucket of the section's first row.
   */
  'firstBucket': (number);
  /**
   * The bucket of its last row.
   */
  'lastBucket': (number);
}
