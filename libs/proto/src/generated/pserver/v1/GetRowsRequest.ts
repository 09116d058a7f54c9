// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Reads rows.
 */
export interface GetRowsRequest {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * The table.
   */
  'table'?: (string);
  /**
   * The ids, int64 little-endian, each placed on this shard; duplicates allowed.
   */
  'ids'?: (Buffer | Uint8Array | string);
}

/**
 * Reads rows.
 */
export interface GetRowsRequest__Output {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * The table.
   */
  'table': (string);
  /**
   * The ids, int64 little-endian, each placed on this shard; duplicates allowed.
   */
  'ids': (Buffer);
}
