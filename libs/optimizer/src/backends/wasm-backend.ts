import type { Clip, Vector } from '../kernels/reference-kernels';
import type { WasmKernels } from '../kernels/wasm-kernels';
import type { Float32Block, TensorMemory } from '../memory/tensor-memory';
import { ArenaGradient } from './arena-gradient';
import type { Backend, GradientBuffer, UpdateStep } from './backend';

/**
 * The streams of one kernel call (see `streamPlacement`): the parameter and up to three slots are
 * 0 to 3, then the gradient, then a scratch array (a copied-in or clipped gradient).
 */
const gradientStream = 4;
const scratchStream = 5;

/** Tensors of at most this many bytes keep their last gradient buffer for the next push. */
const maxSpareBytes = 16 * 1024;

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
  private readonly kernels: WasmKernels;
  /** Buffers from allocateGradient, by their values: in this arena, padding zeroed. */
  private readonly issued = new WeakMap<Float32Array, ArenaGradient>();
  /**
   * A small tensor's last released gradient buffer, kept for its next push: its pushes come one
   * after another, and taking a buffer from the arena and giving it back cost more than applying
   * a gradient of a few hundred floats. Large tensors keep none (it would double their memory).
   */
  private spare: ArenaGradient | undefined;
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
    this.kernels = this.blocks[0]!.arena.kernels;
  }

  private get parameter(): Float32Block {
    return this.blocks[0]!;
  }

  hasNonFinite(gradient: Vector): boolean {
    const verdict = this.issuedGradient(gradient)?.verdict;
    if (verdict !== undefined) return verdict;
    const copy = this.copyUnlessIssued(gradient);
    try {
      const g = copy ? copy.offset : gradient.byteOffset;
      return this.kernels.nonFinite(g, this.parameter.vectors) !== 0;
    } finally {
      if (copy) this.memory.free([copy]);
    }
  }

  sumSquares(gradient: Vector, clipValue: number): number {
    const copy = this.copyUnlessIssued(gradient);
    try {
      const g = copy ? copy.offset : gradient.byteOffset;
      return this.kernels.sumSquares(g, this.parameter.vectors, clipValue);
    } finally {
      if (copy) this.memory.free([copy]);
    }
  }

  apply(step: UpdateStep, gradient: Vector, clip: Clip): void {
    let scratch = this.copyUnlessIssued(gradient);
    try {
      let g = scratch ? scratch.offset : gradient.byteOffset;
      // The reference clips each element as min(max(g, -cv), cv) · s in float32. With cv = +∞ and
      // s = 1 that is g itself for every float32 g, ±0 and subnormals included, so the clipping
      // pass is left out.
      const cv = Math.fround(clip.clipValue);
      const s = Math.fround(clip.scale);
      if (cv !== Number.POSITIVE_INFINITY || s !== 1) {
        scratch ??= this.scratch();
        this.kernels.clip(scratch.offset, g, this.parameter.vectors, cv, s);
        g = scratch.offset;
      }
      this.run(step, g);
    } finally {
      if (scratch) this.memory.free([scratch]);
    }
    this.issuedGradient(gradient)?.forget();
  }

  allocateGradient(): GradientBuffer {
    const spare = this.spare;
    if (spare) {
      this.spare = undefined;
      spare.reuse();
      return spare;
    }
    const [block] = this.memory.allocate(
      [this.values.length],
      'padding',
      this.parameter.arena,
      gradientStream,
    );
    const gradient = new ArenaGradient(block!, (released) => {
      if (!this.released && !this.spare && released.values.byteLength <= maxSpareBytes) {
        this.spare = released;
        return;
      }
      this.issued.delete(released.values);
      this.memory.free([released.block]);
    });
    this.issued.set(gradient.values, gradient);
    return gradient;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.memory.free(this.blocks);
    if (this.spare) this.memory.free([this.spare.block]);
    this.spare = undefined;
  }

  /** Runs the rule's kernel over the parameter, its slots and the gradient at byte offset `g`. */
  private run(step: UpdateStep, g: number): void {
    const k = this.kernels;
    const { offset: p, vectors: n4 } = this.parameter;
    const slot = (i: number): number => this.blocks[1 + i]!.offset;
    switch (step.rule) {
      case 'sgd':
        return k.sgd(p, g, n4, step.lr, step.weightDecay);
      case 'sgdMomentum':
        return (step.nesterov ? k.sgdNesterov : k.sgdMomentum)(
          p,
          g,
          slot(0),
          n4,
          step.lr,
          step.momentum,
          step.weightDecay,
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
        );
      case 'adagrad':
        return k.adagrad(p, g, slot(0), n4, step.lr, step.epsilon, step.weightDecay);
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
        );
      }
    }
  }

  /**
   * Undefined for a buffer from allocateGradient, which the kernels read in place; otherwise a
   * scratch array holding a copy of the gradient, for the caller to free.
   */
  private copyUnlessIssued(gradient: Vector): Float32Block | undefined {
    if (this.issuedGradient(gradient)) return undefined;
    const copy = this.scratch();
    copy.values.set(gradient);
    return copy;
  }

  private issuedGradient(gradient: Vector): ArenaGradient | undefined {
    return gradient instanceof Float32Array ? this.issued.get(gradient) : undefined;
  }

  /** A gradient-sized array in the tensor's arena, its padding zeroed. */
  private scratch(): Float32Block {
    return this.memory.allocate(
      [this.values.length],
      'padding',
      this.parameter.arena,
      scratchStream,
    )[0]!;
  }
}
