// Original file: proto/pserver/v1/replication.proto

import type { Long } from '@grpc/proto-loader';

/**
 * The replica has loaded the copy taken at `seq`.
 */
export interface ReplicaLoadedRequest {
  /**
   * The shard index.
   */
  'index'?: (number);
  /**
   * The primary's shard epoch.
   */
  'primaryEpoch'?: (number | string | Long);
  /**
   * The replica's member name.
   */
  'member'?: (string);
  /**
   * The sequence number of the copy it loaded.
   */
  'seq'?: (number | string | Long);
}

/**
 * The replica has loaded the copy taken at `seq`.
 */
export interface ReplicaLoadedRequest__Output {
  /**
   * The shard index.
   */
  'index': (number);
  /**
   * The primary's shard epoch.
   */
  'primaryEpoch': (number);
  /**
   * The replica's member name.
   */
  'member': (string);
  /**
   * The sequence number of the copy it loaded.
   */
  'seq': (number);
}
