// Original file: proto/pserver/v1/checkpoint.proto

import type { TableIndex as _pserver_v1_TableIndex, TableIndex__Output as _pserver_v1_TableIndex__Output } from '../../pserver/v1/TableIndex';

/**
 * The file's table frames by place: byte offset (of the frame's length prefix) and length
 * (prefix included) of each, and for row sections their buckets and CRC-32C (of the frame's
 * bytes, prefix included), so one section can be read and checked alone.
 */
export interface CheckpointIndex {
  /**
   * One per table, in file order.
   */
  'tables'?: (_pserver_v1_TableIndex)[];
}

/**
 * The file's table frames by place: byte offset (of the frame's length prefix) and length
 * (prefix included) of each, and for row sections their buckets and CRC-32C (of the frame's
 * bytes, prefix included), so one section can be read and checked alone.
 */
export interface CheckpointIndex__Output {
  /**
   * One per table, in file order.
   */
  'tables': (_pserver_v1_TableIndex__Output)[];
}
