// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Reads tensors.
 */
export interface GetParamsRequest {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * Names of tensors or blocks on this shard; each at most once.
   */
  'names'?: (string)[];
}

/**
 * Reads tensors.
 */
export interface GetParamsRequest__Output {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * Names of tensors or blocks on this shard; each at most once.
   */
  'names': (string)[];
}
