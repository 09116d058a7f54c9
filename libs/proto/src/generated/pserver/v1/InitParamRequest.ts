// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';
import type { Tensor as _pserver_v1_Tensor, Tensor__Output as _pserver_v1_Tensor__Output } from '../../pserver/v1/Tensor';
import type { OptimizerConfig as _pserver_v1_OptimizerConfig, OptimizerConfig__Output as _pserver_v1_OptimizerConfig__Output } from '../../pserver/v1/OptimizerConfig';

/**
 * Creates or replaces one tensor or block.
 */
export interface InitParamRequest {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * The initial value. Its name must be placed on this shard.
   */
  'param'?: (_pserver_v1_Tensor | null);
  /**
   * How gradients update it. Ignored (and must be empty) for integer element types, which are
   * stored, not optimized.
   */
  'optimizer'?: (_pserver_v1_OptimizerConfig | null);
}

/**
 * Creates or replaces one tensor or block.
 */
export interface InitParamRequest__Output {
  /**
   * The caller's context; shard_epoch must match the shard's.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * The initial value. Its name must be placed on this shard.
   */
  'param': (_pserver_v1_Tensor__Output | null);
  /**
   * How gradients update it. Ignored (and must be empty) for integer element types, which are
   * stored, not optimized.
   */
  'optimizer': (_pserver_v1_OptimizerConfig__Output | null);
}
