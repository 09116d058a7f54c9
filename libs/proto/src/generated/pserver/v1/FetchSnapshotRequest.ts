// Original file: proto/pserver/v1/replication.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Asks the primary for a copy of the shard.
 */
export interface FetchSnapshotRequest {
  /**
   * The shard index.
   */
  'index'?: (number);
  /**
   * The primary's shard epoch, as `replica/<i>/<member>` names it.
   */
  'primaryEpoch'?: (number | string | Long);
  /**
   * The replica's member name.
   */
  'member'?: (string);
}

/**
 * Asks the primary for a copy of the shard.
 */
export interface FetchSnapshotRequest__Output {
  /**
   * The shard index.
   */
  'index': (number);
  /**
   * The primary's shard epoch, as `replica/<i>/<member>` names it.
   */
  'primaryEpoch': (number);
  /**
   * The replica's member name.
   */
  'member': (string);
}
