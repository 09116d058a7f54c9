import { describe, OptimizerError } from '../errors';
import type {
  AdadeltaScalars,
  AdagradScalars,
  AdamScalars,
  Clip,
  RmsPropScalars,
  SgdMomentumScalars,
  SgdScalars,
  Vector,
} from '../kernels/reference-kernels';

/** One update, with every scalar computed: what a backend runs over the parameter and its slots. */
export type UpdateStep =
  | ({ rule: 'sgd' } & SgdScalars)
  | ({ rule: 'sgdMomentum' } & SgdMomentumScalars)
  | ({ rule: 'adam' } & AdamScalars)
  | ({ rule: 'adagrad' } & AdagradScalars)
  | ({ rule: 'adadelta' } & AdadeltaScalars)
  | ({ rule: 'rmsprop'; centered: boolean } & RmsPropScalars);

/** A gradient-sized array next to a tensor, to fill and pass to `check` and `update`. */
export interface GradientBuffer {
  readonly values: Vector;
  /**
   * Says that bytes [0, byteEnd) of `values` now hold their final values, for a caller that fills
   * the buffer in pieces (a gradient arriving in chunks). A buffer in WebAssembly memory scans
   * each 64-byte block for NaN and ±Infinity as soon as it is complete, while it is still in the
   * cache; once the buffer is filled to its end, `Optimizer.check` answers from what it saw and
   * does not read the buffer again. Plain arrays scan at `check` time, as without this call.
   *
   * A byteEnd not beyond the previous call's starts a new filling, and `update` forgets what was
   * seen, so a buffer can be filled again; bytes changed after being declared final are not seen.
   * Throws OPTIMIZER_LENGTH_MISMATCH for a byteEnd outside [0, values.byteLength].
   */
  filled(byteEnd: number): void;
  release(): void;
}

/** Checks `filled`'s argument against a buffer of `byteLength` bytes. */
export function checkFilledEnd(byteEnd: number, byteLength: number): void {
  if (!Number.isSafeInteger(byteEnd) || byteEnd < 0 || byteEnd > byteLength) {
    throw new OptimizerError(
      'OPTIMIZER_LENGTH_MISMATCH',
      `gradient: filled to byte ${describe(byteEnd)}, the buffer has ${byteLength} bytes`,
      'gradient',
      byteEnd,
    );
  }
}

/**
 * Where a tensor and its optimizer slots live and which loops update them: plain typed arrays
 * with the TypeScript kernels, or a WebAssembly arena with the SIMD kernels.
 */
export interface Backend {
  readonly kind: 'wasm' | 'js';
  readonly values: Vector;
  /** The optimizer's per-element slots, in the order of the algorithm's slot names. */
  readonly slots: readonly Vector[];
  hasNonFinite(gradient: Vector): boolean;
  sumSquares(gradient: Vector, clipValue: number): number;
  apply(step: UpdateStep, gradient: Vector, clip: Clip): void;
  allocateGradient(): GradientBuffer;
  release(): void;
}
