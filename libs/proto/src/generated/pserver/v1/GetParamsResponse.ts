// Original file: proto/pserver/v1/parameter_server.proto

import type { Tensor as _pserver_v1_Tensor, Tensor__Output as _pserver_v1_Tensor__Output } from '../../pserver/v1/Tensor';
import type { Long } from '@grpc/proto-loader';

/**
 * GetParams's reply. Each tensor is read between two updates of that tensor (never half
 * applied); in ASYNC and BOUNDED_STALENESS different tensors may reflect different pushes, in
 * SYNC all reflect the same closed steps.
 */
export interface GetParamsResponse {
  /**
   * The shard's epoch.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * In request order, with their stored shapes.
   */
  'params'?: (_pserver_v1_Tensor)[];
  /**
   * The shard's version the values were read at (as SendGradsResponse.version).
   */
  'version'?: (number | string | Long);
  /**
   * SYNC and BOUNDED_STALENESS: every roster member's pushes up to this step are in the values
   * (in SYNC, the steps closed). 0 in ASYNC.
   */
  'minClock'?: (number | string | Long);
}

/**
 * GetParams's reply. Each tensor is read between two updates of that tensor (never half
 * applied); in ASYNC and BOUNDED_STALENESS different tensors may reflect different pushes, in
 * SYNC all reflect the same closed steps.
 */
export interface GetParamsResponse__Output {
  /**
   * The shard's epoch.
   */
  'shardEpoch': (number);
  /**
   * In request order, with their stored shapes.
   */
  'params': (_pserver_v1_Tensor__Output)[];
  /**
   * The shard's version the values were read at (as SendGradsResponse.version).
   */
  'version': (number);
  /**
   * SYNC and BOUNDED_STALENESS: every roster member's pushes up to this step are in the values
   * (in SYNC, the steps closed). 0 in ASYNC.
   */
  'minClock': (number);
}
