// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';
import type { Tensor as _pserver_v1_Tensor, Tensor__Output as _pserver_v1_Tensor__Output } from '../../pserver/v1/Tensor';
import type { SparseGrad as _pserver_v1_SparseGrad, SparseGrad__Output as _pserver_v1_SparseGrad__Output } from '../../pserver/v1/SparseGrad';
import type { Long } from '@grpc/proto-loader';

/**
 * All of one step's gradients for this shard.
 */
export interface SendGradsRequest {
  /**
   * trainer_id ≠ 0, step ≥ 1 and the shard's epoch.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * One gradient per tensor or block, each with the parameter's name, element type and byte
   * length. `shape`, when given, is the whole tensor's shape and must equal the parameter's
   * (INVALID_ARGUMENT, PSERVER_SHAPE_MISMATCH); clients send it. A name may appear once.
   */
  'grads'?: (_pserver_v1_Tensor)[];
  /**
   * The step's row gradients for tables on this shard, at most one per table; part of the same
   * all-or-nothing push as `grads`.
   */
  'sparse'?: (_pserver_v1_SparseGrad)[];
  /**
   * The examples the gradients were computed from: in SYNC the push's weight in the step's
   * mean (unset: 1). 0 says the trainer has no data for this step (its data ran out): the push
   * must then carry no gradients, and it counts as the trainer's step without changing any
   * value, in every mode — so a barrier never waits for a trainer with nothing to send.
   */
  'sampleCount'?: (number | string | Long);
  '_sampleCount'?: "sampleCount";
}

/**
 * All of one step's gradients for this shard.
 */
export interface SendGradsRequest__Output {
  /**
   * trainer_id ≠ 0, step ≥ 1 and the shard's epoch.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * One gradient per tensor or block, each with the parameter's name, element type and byte
   * length. `shape`, when given, is the whole tensor's shape and must equal the parameter's
   * (INVALID_ARGUMENT, PSERVER_SHAPE_MISMATCH); clients send it. A name may appear once.
   */
  'grads': (_pserver_v1_Tensor__Output)[];
  /**
   * The step's row gradients for tables on this shard, at most one per table; part of the same
   * all-or-nothing push as `grads`.
   */
  'sparse': (_pserver_v1_SparseGrad__Output)[];
  /**
   * The examples the gradients were computed from: in SYNC the push's weight in the step's
   * mean (unset: 1). 0 says the trainer has no data for this step (its data ran out): the push
   * must then carry no gradients, and it counts as the trainer's step without changing any
   * value, in every mode — so a barrier never waits for a trainer with nothing to send.
   */
  'sampleCount'?: (number);
  '_sampleCount'?: "sampleCount";
}
