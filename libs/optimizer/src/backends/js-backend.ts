import {
  adadelta,
  adagrad,
  adam,
  hasNonFinite,
  rmsprop,
  roundFloat32,
  roundFloat64,
  sgd,
  sgdMomentum,
  sumSquares,
  type Clip,
  type Round,
  type Vector,
} from '../kernels/reference-kernels';
import { checkFilledEnd, type Backend, type GradientBuffer, type UpdateStep } from './backend';

/** Plain typed arrays and the TypeScript loops: float64 tensors, and float32 without WebAssembly. */
export class JsBackend implements Backend {
  readonly kind = 'js';
  readonly values: Vector;
  readonly slots: readonly Vector[];
  private readonly round: Round;

  constructor(
    private readonly float32: boolean,
    length: number,
    slotCount: number,
  ) {
    const make = (): Vector => (float32 ? new Float32Array(length) : new Float64Array(length));
    this.values = make();
    this.slots = Array.from({ length: slotCount }, make);
    this.round = float32 ? roundFloat32 : roundFloat64;
  }

  hasNonFinite(gradient: Vector): boolean {
    return hasNonFinite(gradient, this.values.length);
  }

  sumSquares(gradient: Vector, clipValue: number): number {
    return sumSquares(gradient, this.values.length, clipValue);
  }

  apply(step: UpdateStep, g: Vector, clip: Clip): void {
    const { values: p, slots, round: r } = this;
    const n = p.length;
    switch (step.rule) {
      case 'sgd':
        return sgd(p, g, n, step, clip, r);
      case 'sgdMomentum':
        return sgdMomentum(p, g, slots[0]!, n, step, clip, r);
      case 'adam':
        return adam(p, g, slots[0]!, slots[1]!, n, step, clip, r);
      case 'adagrad':
        return adagrad(p, g, slots[0]!, n, step, clip, r);
      case 'adadelta':
        return adadelta(p, g, slots[0]!, slots[1]!, n, step, clip, r);
      case 'rmsprop': {
        // Slots: square, then center (centered), then momentum (momentum > 0).
        const center = step.centered ? slots[1] : undefined;
        const momentum = step.momentum > 0 ? slots[step.centered ? 2 : 1] : undefined;
        return rmsprop(p, g, slots[0]!, center, momentum, n, step, clip, r);
      }
    }
  }

  allocateGradient(): GradientBuffer {
    const values = this.float32
      ? new Float32Array(this.values.length)
      : new Float64Array(this.values.length);
    return {
      values,
      // Plain arrays are scanned when checked.
      filled: (byteEnd) => checkFilledEnd(byteEnd, values.byteLength),
      release: () => undefined,
    };
  }

  release(): void {
    // Garbage-collected.
  }
}
