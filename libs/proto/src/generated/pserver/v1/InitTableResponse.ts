// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * InitTable's reply.
 */
export interface InitTableResponse {
  /**
   * The shard's epoch.
   */
  'shardEpoch'?: (number | string | Long);
}

/**
 * InitTable's reply.
 */
export interface InitTableResponse__Output {
  /**
   * The shard's epoch.
   */
  'shardEpoch': (number);
}
