// Original file: proto/pserver/v1/replication.proto

import type { GradientChunk as _pserver_v1_GradientChunk, GradientChunk__Output as _pserver_v1_GradientChunk__Output } from '../../pserver/v1/GradientChunk';
import type { SparseGrad as _pserver_v1_SparseGrad, SparseGrad__Output as _pserver_v1_SparseGrad__Output } from '../../pserver/v1/SparseGrad';
import type { TableEvictions as _pserver_v1_TableEvictions, TableEvictions__Output as _pserver_v1_TableEvictions__Output } from '../../pserver/v1/TableEvictions';
import type { ClosedStep as _pserver_v1_ClosedStep, ClosedStep__Output as _pserver_v1_ClosedStep__Output } from '../../pserver/v1/ClosedStep';
import type { StepMark as _pserver_v1_StepMark, StepMark__Output as _pserver_v1_StepMark__Output } from '../../pserver/v1/StepMark';
import type { MoveTarget as _pserver_v1_MoveTarget, MoveTarget__Output as _pserver_v1_MoveTarget__Output } from '../../pserver/v1/MoveTarget';
import type { Long } from '@grpc/proto-loader';

/**
 * One push the primary applied.
 */
export interface ForwardRequest {
  /**
   * The shard index.
   */
  'index'?: (number);
  /**
   * The primary's shard epoch.
   */
  'primaryEpoch'?: (number | string | Long);
  /**
   * The push's sequence number at the primary: 1 + the previous push's.
   */
  'seq'?: (number | string | Long);
  /**
   * The trainer and step of the push (its step mark moves as on the primary).
   */
  'trainerId'?: (number | string | Long);
  /**
   * The push's step.
   */
  'step'?: (number | string | Long);
  /**
   * The dense gradients, as pieces (a unary push's gradient is one piece at offset 0).
   */
  'grads'?: (_pserver_v1_GradientChunk)[];
  /**
   * The row gradients.
   */
  'sparse'?: (_pserver_v1_SparseGrad)[];
  /**
   * The primary counts this replica in sync once it has applied this push: it then holds every
   * push the primary acknowledged, and may be promoted. A forward whose `seq` the replica has
   * applied already changes nothing but this (the primary sends one to say it when idle).
   */
  'inSync'?: (boolean);
  /**
   * The rows the push evicted on the primary, per table, in order: the replica evicts exactly
   * these (which rows a bound or an age evicts depends on where rows lie in memory).
   */
  'evictions'?: (_pserver_v1_TableEvictions)[];
  /**
   * When set: the primary's digest of the shard right after it applied this push (every
   * `--replica-digest-interval-s`). The replica compares its own after applying it; a difference
   * is counted (`pserver_replica_digest_mismatches_total`) and logged as an error.
   */
  'digest'?: (string);
  /**
   * SYNC: set when the forward is a closed step rather than a push: `grads` are the means the
   * primary applied (one piece per tensor), applied once, and the contributors' step marks move
   * to `step`. The primary's reads of the next step wait until its replicas applied it.
   */
  'closedStep'?: (_pserver_v1_ClosedStep | null);
  /**
   * Step marks the primary moved since its last forward without applying anything (a trainer's
   * read or push said it finished a step: SYNC and SSP); the replica sets them first.
   */
  'marks'?: (_pserver_v1_StepMark)[];
  /**
   * Set for a live move: the push sliced to what `move_to` takes of shard `index` (see
   * FetchSnapshotRequest.move_to); served by the receiver of those slices, in the order of `seq`.
   */
  'moveTo'?: (_pserver_v1_MoveTarget | null);
}

/**
 * One push the primary applied.
 */
export interface ForwardRequest__Output {
  /**
   * The shard index.
   */
  'index': (number);
  /**
   * The primary's shard epoch.
   */
  'primaryEpoch': (number);
  /**
   * The push's sequence number at the primary: 1 + the previous push's.
   */
  'seq': (number);
  /**
   * The trainer and step of the push (its step mark moves as on the primary).
   */
  'trainerId': (number);
  /**
   * The push's step.
   */
  'step': (number);
  /**
   * The dense gradients, as pieces (a unary push's gradient is one piece at offset 0).
   */
  'grads': (_pserver_v1_GradientChunk__Output)[];
  /**
   * The row gradients.
   */
  'sparse': (_pserver_v1_SparseGrad__Output)[];
  /**
   * The primary counts this replica in sync once it has applied this push: it then holds every
   * push the primary acknowledged, and may be promoted. A forward whose `seq` the replica has
   * applied already changes nothing but this (the primary sends one to say it when idle).
   */
  'inSync': (boolean);
  /**
   * The rows the push evicted on the primary, per table, in order: the replica evicts exactly
   * these (which rows a bound or an age evicts depends on where rows lie in memory).
   */
  'evictions': (_pserver_v1_TableEvictions__Output)[];
  /**
   * When set: the primary's digest of the shard right after it applied this push (every
   * `--replica-digest-interval-s`). The replica compares its own after applying it; a difference
   * is counted (`pserver_replica_digest_mismatches_total`) and logged as an error.
   */
  'digest': (string);
  /**
   * SYNC: set when the forward is a closed step rather than a push: `grads` are the means the
   * primary applied (one piece per tensor), applied once, and the contributors' step marks move
   * to `step`. The primary's reads of the next step wait until its replicas applied it.
   */
  'closedStep': (_pserver_v1_ClosedStep__Output | null);
  /**
   * Step marks the primary moved since its last forward without applying anything (a trainer's
   * read or push said it finished a step: SYNC and SSP); the replica sets them first.
   */
  'marks': (_pserver_v1_StepMark__Output)[];
  /**
   * Set for a live move: the push sliced to what `move_to` takes of shard `index` (see
   * FetchSnapshotRequest.move_to); served by the receiver of those slices, in the order of `seq`.
   */
  'moveTo': (_pserver_v1_MoveTarget__Output | null);
}
