// Original file: proto/pserver/v1/table.proto

import type { ElementType as _pserver_v1_ElementType, ElementType__Output as _pserver_v1_ElementType__Output } from '../../pserver/v1/ElementType';
import type { RowInitializer as _pserver_v1_RowInitializer, RowInitializer__Output as _pserver_v1_RowInitializer__Output } from '../../pserver/v1/RowInitializer';
import type { RowOptimizerConfig as _pserver_v1_RowOptimizerConfig, RowOptimizerConfig__Output as _pserver_v1_RowOptimizerConfig__Output } from '../../pserver/v1/RowOptimizerConfig';
import type { Admission as _pserver_v1_Admission, Admission__Output as _pserver_v1_Admission__Output } from '../../pserver/v1/Admission';
import type { Eviction as _pserver_v1_Eviction, Eviction__Output as _pserver_v1_Eviction__Output } from '../../pserver/v1/Eviction';
import type { PullMissing as _pserver_v1_PullMissing, PullMissing__Output as _pserver_v1_PullMissing__Output } from '../../pserver/v1/PullMissing';
import type { Long } from '@grpc/proto-loader';

/**
 * A sparse embedding table: rows of `dim` float32 values addressed by signed 64-bit ids, created
 * when an id is first pushed (and admitted), evicted by age or by a row bound. A table is spread
 * over the shards as a tensor of `buckets` blocks: the id's bucket is
 * `fmix32(lo ^ fmix32(hi)) & (buckets − 1)` and bucket b lives where block `<name>@<b>` would
 * (proto/README.md, "Tables"; vectors in testdata/table_placement.json).
 */
export interface TableSpec {
  /**
   * The table's name, in the tensor namespace (no tensor may have it); no `@`.
   */
  'name'?: (string);
  /**
   * Values per row, 1 to 4096.
   */
  'dim'?: (number);
  /**
   * The type of the values: FLOAT32 (the only one supported; UNSPECIFIED means FLOAT32).
   */
  'valueType'?: (_pserver_v1_ElementType);
  /**
   * Buckets the ids are spread over: a power of two from 1 to 2^24, fixed for the job. Many more
   * buckets than shards balance the rows (4096 is a good default).
   */
  'buckets'?: (number);
  /**
   * The value a row starts from, also what a pull of a missing id reads (PULL_MISSING_INIT).
   */
  'initializer'?: (_pserver_v1_RowInitializer | null);
  /**
   * How pushed row gradients update a row.
   */
  'optimizer'?: (_pserver_v1_RowOptimizerConfig | null);
  /**
   * Which new ids get a row. Unset: every id.
   */
  'admission'?: (_pserver_v1_Admission | null);
  /**
   * When rows are removed. Unset: never.
   */
  'eviction'?: (_pserver_v1_Eviction | null);
  /**
   * Rows the table is expected to hold on all shards together, to size it up front (optional).
   */
  'expectedRows'?: (number | string | Long);
  /**
   * What a pull of an id without a row reads.
   */
  'pullMissing'?: (_pserver_v1_PullMissing);
}

/**
 * A sparse embedding table: rows of `dim` float32 values addressed by signed 64-bit ids, created
 * when an id is first pushed (and admitted), evicted by age or by a row bound. A table is spread
 * over the shards as a tensor of `buckets` blocks: the id's bucket is
 * `fmix32(lo ^ fmix32(hi)) & (buckets − 1)` and bucket b lives where block `<name>@<b>` would
 * (proto/README.md, "Tables"; vectors in testdata/table_placement.json).
 */
export interface TableSpec__Output {
  /**
   * The table's name, in the tensor namespace (no tensor may have it); no `@`.
   */
  'name': (string);
  /**
   * Values per row, 1 to 4096.
   */
  'dim': (number);
  /**
   * The type of the values: FLOAT32 (the only one supported; UNSPECIFIED means FLOAT32).
   */
  'valueType': (_pserver_v1_ElementType__Output);
  /**
   * Buckets the ids are spread over: a power of two from 1 to 2^24, fixed for the job. Many more
   * buckets than shards balance the rows (4096 is a good default).
   */
  'buckets': (number);
  /**
   * The value a row starts from, also what a pull of a missing id reads (PULL_MISSING_INIT).
   */
  'initializer': (_pserver_v1_RowInitializer__Output | null);
  /**
   * How pushed row gradients update a row.
   */
  'optimizer': (_pserver_v1_RowOptimizerConfig__Output | null);
  /**
   * Which new ids get a row. Unset: every id.
   */
  'admission': (_pserver_v1_Admission__Output | null);
  /**
   * When rows are removed. Unset: never.
   */
  'eviction': (_pserver_v1_Eviction__Output | null);
  /**
   * Rows the table is expected to hold on all shards together, to size it up front (optional).
   */
  'expectedRows': (number);
  /**
   * What a pull of an id without a row reads.
   */
  'pullMissing': (_pserver_v1_PullMissing__Output);
}
