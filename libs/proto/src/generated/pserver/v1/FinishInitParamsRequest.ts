// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Marks the shard initialized.
 */
export interface FinishInitParamsRequest {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context'?: (_pserver_v1_RequestContext | null);
}

/**
 * Marks the shard initialized.
 */
export interface FinishInitParamsRequest__Output {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
}
