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

/** A gradient-sized array next to a tensor, to fill and pass to `update`. */
export interface GradientBuffer {
  readonly values: Vector;
  release(): void;
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
