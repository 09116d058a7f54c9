// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Drain's reply, sent before the pserver stops.
 */
export interface DrainResponse {
  /**
   * The index it served and hands over; absent for a spare or a replica.
   */
  'index'?: (number);
  /**
   * The shard epoch it served the index at (0 without an index): its successor's is higher.
   */
  'shardEpoch'?: (number | string | Long);
  '_index'?: "index";
}

/**
 * Drain's reply, sent before the pserver stops.
 */
export interface DrainResponse__Output {
  /**
   * The index it served and hands over; absent for a spare or a replica.
   */
  'index'?: (number);
  /**
   * The shard epoch it served the index at (0 without an index): its successor's is higher.
   */
  'shardEpoch': (number);
  '_index'?: "index";
}
