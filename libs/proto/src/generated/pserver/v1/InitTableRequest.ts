// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';
import type { TableSpec as _pserver_v1_TableSpec, TableSpec__Output as _pserver_v1_TableSpec__Output } from '../../pserver/v1/TableSpec';

/**
 * Creates a table's part on this shard.
 */
export interface InitTableRequest {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * The table.
   */
  'spec'?: (_pserver_v1_TableSpec | null);
}

/**
 * Creates a table's part on this shard.
 */
export interface InitTableRequest__Output {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * The table.
   */
  'spec': (_pserver_v1_TableSpec__Output | null);
}
