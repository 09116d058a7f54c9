// Original file: proto/pserver/v1/checkpoint.proto

import type { Tensor as _pserver_v1_Tensor, Tensor__Output as _pserver_v1_Tensor__Output } from '../../pserver/v1/Tensor';
import type { OptimizerConfig as _pserver_v1_OptimizerConfig, OptimizerConfig__Output as _pserver_v1_OptimizerConfig__Output } from '../../pserver/v1/OptimizerConfig';
import type { OptimizerState as _pserver_v1_OptimizerState, OptimizerState__Output as _pserver_v1_OptimizerState__Output } from '../../pserver/v1/OptimizerState';

/**
 * One tensor or block of the shard, exactly as the shard held it.
 */
export interface TensorRecord {
  /**
   * Name, element type, shape of the whole tensor, and content.
   */
  'tensor'?: (_pserver_v1_Tensor | null);
  /**
   * The optimizer configuration given in InitParam.
   */
  'optimizer'?: (_pserver_v1_OptimizerConfig | null);
  /**
   * The optimizer's state, bit-exact.
   */
  'state'?: (_pserver_v1_OptimizerState | null);
}

/**
 * One tensor or block of the shard, exactly as the shard held it.
 */
export interface TensorRecord__Output {
  /**
   * Name, element type, shape of the whole tensor, and content.
   */
  'tensor': (_pserver_v1_Tensor__Output | null);
  /**
   * The optimizer configuration given in InitParam.
   */
  'optimizer': (_pserver_v1_OptimizerConfig__Output | null);
  /**
   * The optimizer's state, bit-exact.
   */
  'state': (_pserver_v1_OptimizerState__Output | null);
}
