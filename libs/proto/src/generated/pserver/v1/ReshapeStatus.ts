// Original file: proto/pserver/v1/master.proto

import type { ReshapeReceiver as _pserver_v1_ReshapeReceiver, ReshapeReceiver__Output as _pserver_v1_ReshapeReceiver__Output } from '../../pserver/v1/ReshapeReceiver';

/**
 * A change of an initialized job's shard count made while the job was down: pending until every
 * index of the new count has restored its share of the checkpoints written at the old count.
 */
export interface ReshapeStatus {
  /**
   * The shard count the checkpoints were written at.
   */
  'fromShardCount'?: (number);
  /**
   * The count the job serves at now.
   */
  'toShardCount'?: (number);
  /**
   * The old indices whose latest checkpoint is restored from (an index that never committed one
   * is not listed), ascending.
   */
  'sources'?: (number)[];
  /**
   * The new indices that restored their share and committed it, ascending.
   */
  'restored'?: (number)[];
  /**
   * Set when the pending record cannot be read (the counts are then 0): why.
   */
  'corrupt'?: (string);
  /**
   * The change was asked while the job ran and its primaries are still handing their shards
   * back: the job serves at from_shard_count until all did; `sources` and `restored` are empty
   * until then.
   */
  'live'?: (boolean);
  /**
   * While `live`: the old indices handed back so far, ascending.
   */
  'handedBack'?: (number)[];
  /**
   * While `live`: the receiver of each index of the new count that has one, by index (it copies
   * that index's slices from the old primaries while they serve; an index without one restores
   * its share from the final checkpoints).
   */
  'receivers'?: (_pserver_v1_ReshapeReceiver)[];
  /**
   * While `live`: the old indices whose primary says every receiver loaded its copy, ascending
   * (the primaries refuse pushes together once every one did).
   */
  'copied'?: (number)[];
  /**
   * While `live`: the old indices whose primary, pushes refused, says the receivers hold its
   * whole shard, ascending (when every old index does, no final checkpoint is written).
   */
  'caughtUp'?: (number)[];
}

/**
 * A change of an initialized job's shard count made while the job was down: pending until every
 * index of the new count has restored its share of the checkpoints written at the old count.
 */
export interface ReshapeStatus__Output {
  /**
   * The shard count the checkpoints were written at.
   */
  'fromShardCount': (number);
  /**
   * The count the job serves at now.
   */
  'toShardCount': (number);
  /**
   * The old indices whose latest checkpoint is restored from (an index that never committed one
   * is not listed), ascending.
   */
  'sources': (number)[];
  /**
   * The new indices that restored their share and committed it, ascending.
   */
  'restored': (number)[];
  /**
   * Set when the pending record cannot be read (the counts are then 0): why.
   */
  'corrupt': (string);
  /**
   * The change was asked while the job ran and its primaries are still handing their shards
   * back: the job serves at from_shard_count until all did; `sources` and `restored` are empty
   * until then.
   */
  'live': (boolean);
  /**
   * While `live`: the old indices handed back so far, ascending.
   */
  'handedBack': (number)[];
  /**
   * While `live`: the receiver of each index of the new count that has one, by index (it copies
   * that index's slices from the old primaries while they serve; an index without one restores
   * its share from the final checkpoints).
   */
  'receivers': (_pserver_v1_ReshapeReceiver__Output)[];
  /**
   * While `live`: the old indices whose primary says every receiver loaded its copy, ascending
   * (the primaries refuse pushes together once every one did).
   */
  'copied': (number)[];
  /**
   * While `live`: the old indices whose primary, pushes refused, says the receivers hold its
   * whole shard, ascending (when every old index does, no final checkpoint is written).
   */
  'caughtUp': (number)[];
}
