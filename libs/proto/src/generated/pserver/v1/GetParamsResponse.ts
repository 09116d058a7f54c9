// Original file: proto/pserver/v1/parameter_server.proto

import type { Tensor as _pserver_v1_Tensor, Tensor__Output as _pserver_v1_Tensor__Output } from '../../pserver/v1/Tensor';
import type { Long } from '@grpc/proto-loader';

/**
 * GetParams's reply. Each tensor is read between two updates of that tensor (never half
 * applied); different tensors may reflect different pushes.
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
}

/**
 * GetParams's reply. Each tensor is read between two updates of that tensor (never half
 * applied); different tensors may reflect different pushes.
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
}
