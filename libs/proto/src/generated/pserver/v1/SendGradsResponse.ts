// Original file: proto/pserver/v1/parameter_server.proto

import type { PushOutcome as _pserver_v1_PushOutcome, PushOutcome__Output as _pserver_v1_PushOutcome__Output } from '../../pserver/v1/PushOutcome';
import type { SparseOutcome as _pserver_v1_SparseOutcome, SparseOutcome__Output as _pserver_v1_SparseOutcome__Output } from '../../pserver/v1/SparseOutcome';
import type { Long } from '@grpc/proto-loader';

/**
 * SendGrads's reply.
 */
export interface SendGradsResponse {
  /**
   * The shard's epoch.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * What became of the push.
   */
  'outcome'?: (_pserver_v1_PushOutcome);
  /**
   * Gradients not applied because they held NaN or ±Infinity and their tensor's policy is
   * NON_FINITE_POLICY_SKIP.
   */
  'skippedNonFinite'?: (string)[];
  /**
   * The trainer's last applied step on this shard after this push.
   */
  'lastAppliedStep'?: (number | string | Long);
  /**
   * What an applied push did to each table it carried, in request order.
   */
  'sparse'?: (_pserver_v1_SparseOutcome)[];
  /**
   * The shard's version after this push: in SYNC the steps closed, otherwise the pushes applied
   * since the shard's state began.
   */
  'version'?: (number | string | Long);
}

/**
 * SendGrads's reply.
 */
export interface SendGradsResponse__Output {
  /**
   * The shard's epoch.
   */
  'shardEpoch': (number);
  /**
   * What became of the push.
   */
  'outcome': (_pserver_v1_PushOutcome__Output);
  /**
   * Gradients not applied because they held NaN or ±Infinity and their tensor's policy is
   * NON_FINITE_POLICY_SKIP.
   */
  'skippedNonFinite': (string)[];
  /**
   * The trainer's last applied step on this shard after this push.
   */
  'lastAppliedStep': (number);
  /**
   * What an applied push did to each table it carried, in request order.
   */
  'sparse': (_pserver_v1_SparseOutcome__Output)[];
  /**
   * The shard's version after this push: in SYNC the steps closed, otherwise the pushes applied
   * since the shard's state began.
   */
  'version': (number);
}
