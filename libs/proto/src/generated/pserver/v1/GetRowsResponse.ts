// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * GetRows's reply.
 */
export interface GetRowsResponse {
  /**
   * The shard's epoch.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * The rows in request order, ids × dim float32 little-endian.
   */
  'values'?: (Buffer | Uint8Array | string);
  /**
   * Bit i (byte i / 8, bit i % 8, least significant first) is set when id i has a row.
   */
  'found'?: (Buffer | Uint8Array | string);
}

/**
 * GetRows's reply.
 */
export interface GetRowsResponse__Output {
  /**
   * The shard's epoch.
   */
  'shardEpoch': (number);
  /**
   * The rows in request order, ids × dim float32 little-endian.
   */
  'values': (Buffer);
  /**
   * Bit i (byte i / 8, bit i % 8, least significant first) is set when id i has a row.
   */
  'found': (Buffer);
}
