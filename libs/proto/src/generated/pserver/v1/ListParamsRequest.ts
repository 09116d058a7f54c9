// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Lists the shard's tensors.
 */
export interface ListParamsRequest {
  /**
   * The caller's context; shard_epoch must match the shard's (0: any).
   */
  'context'?: (_pserver_v1_RequestContext | null);
}

/**
 * Lists the shard's tensors.
 */
export interface ListParamsRequest__Output {
  /**
   * The caller's context; shard_epoch must match the shard's (0: any).
   */
  'context': (_pserver_v1_RequestContext__Output | null);
}
