// Original file: proto/pserver/v1/replication.proto

import type { MoveTarget as _pserver_v1_MoveTarget, MoveTarget__Output as _pserver_v1_MoveTarget__Output } from '../../pserver/v1/MoveTarget';
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
  /**
   * Set for a live move rather than a replica: the caller receives the slices that `move_to`
   * takes of this shard (it is named by `reshape/receiver/<move_to.index>`). From the copy's
   * sequence number on, the primary forwards every push it applies to it, sliced to those slices
   * (`ForwardRequest.move_to`), without waiting for it.
   */
  'moveTo'?: (_pserver_v1_MoveTarget | null);
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
  /**
   * Set for a live move rather than a replica: the caller receives the slices that `move_to`
   * takes of this shard (it is named by `reshape/receiver/<move_to.index>`). From the copy's
   * sequence number on, the primary forwards every push it applies to it, sliced to those slices
   * (`ForwardRequest.move_to`), without waiting for it.
   */
  'moveTo': (_pserver_v1_MoveTarget__Output | null);
}
