// Original file: proto/pserver/v1/replication.proto

import type { MoveTarget as _pserver_v1_MoveTarget, MoveTarget__Output as _pserver_v1_MoveTarget__Output } from '../../pserver/v1/MoveTarget';
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
  /**
   * Set for a live move: the receiver of these slices loaded its copy (the primary hands its
   * index back only once every receiver did, or a bound passed).
   */
  'moveTo'?: (_pserver_v1_MoveTarget | null);
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
  /**
   * Set for a live move: the receiver of these slices loaded its copy (the primary hands its
   * index back only once every receiver did, or a bound passed).
   */
  'moveTo': (_pserver_v1_MoveTarget__Output | null);
}
