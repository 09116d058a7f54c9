import type { Clip, Vector } from '../kernels/reference-kernels';
import type { Float32Block, TensorMemory } from '../memory/tensor-memory';
import type { Backend, GradientBuffer, UpdateStep } from './backend';

/**
 * A float32 tensor and its slots in a WebAssembly arena, updated by the SIMD kernels in place. A
 * gradient outside the arena is copied in for the update (one extra pass); callers that fill a
 * buffer from `allocateGradient` avoid it.
 */
export class WasmBackend implements Backend {
  readonly kind = 'wasm';
  readonly values: Float32Array;
  readonly slots: readonly Float32Array[];
  private readonly blocks: Float32Block[];
  /** Buffers from allocateGradient: in this arena, 16-byte aligned, padding zeroed. */
  private readonly issued = new WeakSet<Float32Array>();
  private released = false;

  constructor(
    private readonly memory: TensorMemory,
    length: number,
    slotCount: number,
  ) {
    this.blocks = memory.allocate(
      Array.from({ length: 1 + slotCount }, () => length),
      'all',
    );
    this.values = this.blocks[0]!.values;
    this.slots = this.blocks.slice(1).map((block) => block.values);
  }

  private get parameter(): Float32Block {
    return this.blocks[0]!;
  }

  hasNonFinite(gradient: Vector): boolean {
    return this.withGradient(
      gradient,
      (g) => this.parameter.arena.kernels.nonFinite(g.offset, g.vectors) !== 0,
    );
  }

  sumSquares(gradient: Vector, clipValue: number): number {
    return this.withGradient(gradient, (g) =>
      this.parameter.arena.kernels.sumSquares(g.offset, g.vectors, clipValue),
    );
  }

  apply(step: UpdateStep, gradient: Vector, clip: Clip): void {
    const { arena, offset: p, vectors: n4 } = this.parameter;
    const k = arena.kernels;
    const slot = (i: number): number => this.blocks[1 + i]!.offset;
    const { clipValue: cv, scale: s } = clip;
    this.withGradient(gradient, ({ offset: g }) => {
      switch (step.rule) {
        case 'sgd':
          return k.sgd(p, g, n4, step.lr, step.weightDecay, cv, s);
        case 'sgdMomentum':
          return k.sgdMomentum(
            p,
            g,
            slot(0),
            n4,
            step.lr,
            step.momentum,
            step.weightDecay,
            step.nesterov ? 1 : 0,
            cv,
            s,
          );
        case 'adam':
          return k.adam(
            p,
            g,
            slot(0),
            slot(1),
            n4,
            step.lrT,
            step.beta1,
            1 - step.beta1,
            step.beta2,
            1 - step.beta2,
            step.epsHat,
            step.weightDecay,
            step.decay,
            cv,
            s,
          );
        case 'adagrad':
          return k.adagrad(p, g, slot(0), n4, step.lr, step.epsilon, step.weightDecay, cv, s);
        case 'adadelta':
          return k.adadelta(
            p,
            g,
            slot(0),
            slot(1),
            n4,
            step.lr,
            step.rho,
            1 - step.rho,
            step.epsilon,
            step.weightDecay,
            cv,
            s,
          );
        case 'rmsprop': {
          // Slots: square, then center (centered), then momentum (momentum > 0); 0 means absent.
          const center = step.centered ? slot(1) : 0;
          const momentum = step.momentum > 0 ? slot(step.centered ? 2 : 1) : 0;
          return k.rmsprop(
            p,
            g,
            slot(0),
            center,
            momentum,
            n4,
            step.lr,
            step.alpha,
            1 - step.alpha,
            step.epsilon,
            step.momentum,
            step.weightDecay,
            cv,
            s,
          );
        }
      }
    });
  }

  allocateGradient(): GradientBuffer {
    const [block] = this.memory.allocate([this.values.length], 'padding', this.parameter.arena);
    let released = false;
    this.issued.add(block!.values);
    return {
      values: block!.values,
      release: () => {
        if (released) return;
        released = true;
        this.issued.delete(block!.values);
        this.memory.free([block!]);
      },
    };
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.memory.free(this.blocks);
  }

  /** Runs `fn` on the gradient's place in the arena, copying it in first if it lives elsewhere. */
  private withGradient<T>(gradient: Vector, fn: (g: { offset: number; vectors: number }) => T): T {
    const { arena, vectors } = this.parameter;
    if (gradient instanceof Float32Array && this.issued.has(gradient) && arena.holds(gradient)) {
      return fn({ offset: gradient.byteOffset, vectors });
    }
    const [copy] = this.memory.allocate([this.values.length], 'padding', arena);
    try {
      copy!.values.set(gradient);
      return fn({ offset: copy!.offset, vectors });
    } finally {
      this.memory.free([copy!]);
    }
  }
}
