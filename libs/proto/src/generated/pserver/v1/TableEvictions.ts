// Original file: proto/pserver/v1/checkpoint.proto


/**
 * Ids of a table evicted since a delta's parent: removed (if present) before the delta's rows
 * are applied, so an id evicted and pushed again ends with the delta's row.
 */
export interface TableEvictions {
  /**
   * The table.
   */
  'table'?: (string);
  /**
   * The ids, int64 little-endian.
   */
  'ids'?: (Buffer | Uint8Array | string);
}

/**
 * Ids of a table evicted since a delta's parent: removed (if present) before the delta's rows
 * are applied, so an id evicted and pushed again ends with the delta's row.
 */
export interface TableEvictions__Output {
  /**
   * The table.
   */
  'table': (string);
  /**
   * The ids, int64 little-endian.
   */
  'ids': (Buffer);
}
