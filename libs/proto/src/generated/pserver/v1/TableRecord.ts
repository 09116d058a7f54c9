// Original file: proto/pserver/v1/checkpoint.proto

import type { TableSpec as _pserver_v1_TableSpec, TableSpec__Output as _pserver_v1_TableSpec__Output } from '../../pserver/v1/TableSpec';
import type { Long } from '@grpc/proto-loader';

/**
 * One sparse table's part on a shard, as it was: its spec, its step and the ids counted for
 * admission. Its rows follow in `TableRows` records, `rows` of them in all (in a delta: the rows
 * pushed since the parent, after `TableEvictions` records of `evicted` ids in all).
 */
export interface TableRecord {
  /**
   * The spec InitTable gave, defaults filled in.
   */
  'spec'?: (_pserver_v1_TableSpec | null);
  /**
   * The table's step on this shard.
   */
  'step'?: (number | string | Long);
  /**
   * Rows in the TableRows records that follow.
   */
  'rows'?: (number | string | Long);
  /**
   * Ids counted for admission and not yet admitted, int64 little-endian.
   */
  'pendingIds'?: (Buffer | Uint8Array | string);
  /**
   * Their counts so far, uint32 little-endian.
   */
  'pendingCounts'?: (Buffer | Uint8Array | string);
  /**
   * A delta: ids in the TableEvictions records that follow, before the rows.
   */
  'evicted'?: (number | string | Long);
}

/**
 * One sparse table's part on a shard, as it was: its spec, its step and the ids counted for
 * admission. Its rows follow in `TableRows` records, `rows` of them in all (in a delta: the rows
 * pushed since the parent, after `TableEvictions` records of `evicted` ids in all).
 */
export interface TableRecord__Output {
  /**
   * The spec InitTable gave, defaults filled in.
   */
  'spec': (_pserver_v1_TableSpec__Output | null);
  /**
   * The table's step on this shard.
   */
  'step': (number);
  /**
   * Rows in the TableRows records that follow.
   */
  'rows': (number);
  /**
   * Ids counted for admission and not yet admitted, int64 little-endian.
   */
  'pendingIds': (Buffer);
  /**
   * Their counts so far, uint32 little-endian.
   */
  'pendingCounts': (Buffer);
  /**
   * A delta: ids in the TableEvictions records that follow, before the rows.
   */
  'evicted': (number);
}
