// Original file: proto/pserver/v1/context.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Stamped on every trainer request. It is the view the work was computed under, captured when
 * the training step began and never read from live state at send time: a gradient computed on
 * parameters of one shard epoch must not be applied under another (see proto/README.md).
 */
export interface RequestContext {
  /**
   * The trainer's id: issued by the master's RegisterTrainer and never reused; in standalone mode
   * (no master) chosen by the client at random. 0 means "no trainer" (tools, admin reads), which
   * SendGrads refuses.
   */
  'trainerId'?: (number | string | Long);
  /**
   * The dataset pass the step belongs to. The master checks it in GetTask; pservers only log it.
   */
  'pass'?: (number | string | Long);
  /**
   * The trainer's step number, strictly increasing per trainer; a re-run of a step keeps its
   * number. A shard applies a push only if its step is above the trainer's last applied step on
   * that shard, so (trainer_id, step) makes a push idempotent. SendGrads needs step ≥ 1.
   */
  'step'?: (number | string | Long);
  /**
   * The target shard's epoch as the trainer's view had it when the step began (from the cluster
   * view, or GetShardStatus in standalone mode). Lower than the shard's: ABORTED with the current
   * epoch in the `pserver-shard-epoch` trailer. Higher: the shard may have been replaced; a bogus
   * value gets INVALID_ARGUMENT. 0 is accepted only by calls that do not depend on the view.
   */
  'shardEpoch'?: (number | string | Long);
}

/**
 * Stamped on every trainer request. It is the view the work was computed under, captured when
 * the training step began and never read from live state at send time: a gradient computed on
 * parameters of one shard epoch must not be applied under another (see proto/README.md).
 */
export interface RequestContext__Output {
  /**
   * The trainer's id: issued by the master's RegisterTrainer and never reused; in standalone mode
   * (no master) chosen by the client at random. 0 means "no trainer" (tools, admin reads), which
   * SendGrads refuses.
   */
  'trainerId': (number);
  /**
   * The dataset pass the step belongs to. The master checks it in GetTask; pservers only log it.
   */
  'pass': (number);
  /**
   * The trainer's step number, strictly increasing per trainer; a re-run of a step keeps its
   * number. A shard applies a push only if its step is above the trainer's last applied step on
   * that shard, so (trainer_id, step) makes a push idempotent. SendGrads needs step ≥ 1.
   */
  'step': (number);
  /**
   * The target shard's epoch as the trainer's view had it when the step began (from the cluster
   * view, or GetShardStatus in standalone mode). Lower than the shard's: ABORTED with the current
   * epoch in the `pserver-shard-epoch` trailer. Higher: the shard may have been replaced; a bogus
   * value gets INVALID_ARGUMENT. 0 is accepted only by calls that do not depend on the view.
   */
  'shardEpoch': (number);
}
