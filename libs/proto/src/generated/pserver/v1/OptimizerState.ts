// Original file: proto/pserver/v1/optimizer.proto

import type { OptimizerSlot as _pserver_v1_OptimizerSlot, OptimizerSlot__Output as _pserver_v1_OptimizerSlot__Output } from '../../pserver/v1/OptimizerSlot';
import type { Long } from '@grpc/proto-loader';

/**
 * An optimizer's state for one tensor, exact to the bit: what a checkpoint stores so that
 * training continued after a restore equals training never interrupted.
 */
export interface OptimizerState {
  /**
   * t: the number of updates applied so far.
   */
  'updates'?: (number | string | Long);
  /**
   * The per-element slots (momentum, first and second moments, accumulators), each as raw
   * little-endian bytes of the parameter's element type and length. Never decimal text.
   */
  'slots'?: (_pserver_v1_OptimizerSlot)[];
  /**
   * Scalar state (e.g. running products of β1 and β2), by name.
   */
  'scalars'?: ({[key: string]: number | string});
}

/**
 * An optimizer's state for one tensor, exact to the bit: what a checkpoint stores so that
 * training continued after a restore equals training never interrupted.
 */
export interface OptimizerState__Output {
  /**
   * t: the number of updates applied so far.
   */
  'updates': (number);
  /**
   * The per-element slots (momentum, first and second moments, accumulators), each as raw
   * little-endian bytes of the parameter's element type and length. Never decimal text.
   */
  'slots': (_pserver_v1_OptimizerSlot__Output)[];
  /**
   * Scalar state (e.g. running products of β1 and β2), by name.
   */
  'scalars': ({[key: string]: number});
}
