// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * InitParam's reply.
 */
export interface InitParamResponse {
  /**
   * The shard's epoch.
   */
  'shardEpoch'?: (number | string | Long);
}

/**
 * InitParam's reply.
 */
export interface InitParamResponse__Output {
  /**
   * The shard's epoch.
   */
  'shardEpoch': (number);
}
