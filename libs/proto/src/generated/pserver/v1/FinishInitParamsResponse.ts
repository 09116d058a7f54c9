// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * FinishInitParams's reply.
 */
export interface FinishInitParamsResponse {
  /**
   * The shard's epoch.
   */
  'shardEpoch'?: (number | string | Long);
}

/**
 * FinishInitParams's reply.
 */
export interface FinishInitParamsResponse__Output {
  /**
   * The shard's epoch.
   */
  'shardEpoch': (number);
}
