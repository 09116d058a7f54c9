import type { Backend, GradientBuffer, UpdateStep } from './backends/backend';
import { JsBackend } from './backends/js-backend';
import { WasmBackend } from './backends/wasm-backend';
import { resolveOptimizerConfig, type OptimizerConfig, type OptimizerConfigInput } from './config';
import { describe, OptimizerError } from './errors';
import type { Vector } from './kernels/reference-kernels';
import { learningRateAt } from './learning-rate';
import { copyIntoShared } from './memory/shared-copy';
import { TensorMemory } from './memory/tensor-memory';
import { invalidState, type OptimizerStateData, type OptimizerStateInput } from './state';

export type FloatElementType = 'ELEMENT_TYPE_FLOAT32' | 'ELEMENT_TYPE_FLOAT64';

export interface OptimizerOptions {
  /** The tensor's element type: FLOAT32 or FLOAT64 (integer and 16-bit types are not optimized). */
  elementType: string;
  /**
   * The initial values, copied into the optimizer's storage: a typed array of the element type, or
   * its raw little-endian bytes (at any alignment, e.g. straight from a message).
   */
  values: Float32Array | Float64Array | Uint8Array;
  config?: OptimizerConfigInput | null;
  /** State exported earlier, to continue exactly where it stopped (slots as arrays or raw bytes). */
  state?: OptimizerStateInput;
  /**
   * Where float32 tensors live: a `TensorMemory` (WebAssembly SIMD kernels; the default is one
   * shared by the process), or 'js' for plain arrays and the TypeScript loops. Float64 tensors
   * always use plain arrays.
   */
  storage?: TensorMemory | 'js';
}

let sharedMemory: TensorMemory | undefined;

/** The TensorMemory used when none is given. */
export function defaultTensorMemory(): TensorMemory {
  return (sharedMemory ??= new TensorMemory());
}

/** What `check` decided for a gradient. */
export type GradientVerdict = 'apply' | 'skip';

/**
 * One tensor (or block) with its update rule and state. The parameter lives in the optimizer's
 * storage (`values`) and is updated in place.
 *
 * A caller that applies several gradients all-or-nothing runs `check` on every one first (it
 * throws or says 'skip' without changing anything), then `update` on each.
 */
export class Optimizer {
  readonly config: OptimizerConfig;
  readonly elementType: FloatElementType;
  private readonly backend: Backend;
  private readonly slotNames: readonly string[];
  private t = 0;
  /** Adam's running products β1ᵗ and β2ᵗ (products, not powers, so they round-trip exactly). */
  private beta1Power = 1;
  private beta2Power = 1;

  constructor(options: OptimizerOptions) {
    this.elementType = floatElementType(options.elementType);
    this.config = resolveOptimizerConfig(options.config);
    this.slotNames = slotNamesOf(this.config);
    const float32 = this.elementType === 'ELEMENT_TYPE_FLOAT32';
    const length = elementLength(options.values, float32, 'values');
    const storage = options.storage ?? (TensorMemory.supported ? defaultTensorMemory() : 'js');
    this.backend =
      float32 && storage !== 'js'
        ? new WasmBackend(storage, length, this.slotNames.length)
        : new JsBackend(float32, length, this.slotNames.length);
    try {
      copyInto(this.backend.values, options.values);
      if (options.state) this.importState(options.state);
      else this.initializeSlots();
    } catch (err) {
      this.backend.release();
      throw err;
    }
  }

  /** The parameter, updated in place by `update`. */
  get values(): Vector {
    return this.backend.values;
  }

  get length(): number {
    return this.backend.values.length;
  }

  /** Updates applied so far (t). */
  get updates(): number {
    return this.t;
  }

  /** Which loops run the updates: 'wasm' (SIMD kernels) or 'js'. */
  get kernel(): 'wasm' | 'js' {
    return this.backend.kind;
  }

  /**
   * A gradient-sized array in the optimizer's storage: filling it and passing it saves a copy. A
   * caller that fills it in pieces calls `filled` after each, so that `check` need not read it
   * again (see `GradientBuffer.filled`).
   */
  allocateGradient(): GradientBuffer {
    return this.backend.allocateGradient();
  }

  /**
   * Checks a gradient without changing anything: its type and length must match the parameter,
   * and a NaN or ±Infinity is rejected (OPTIMIZER_NON_FINITE_GRADIENT) or, with the skip policy,
   * answered 'skip'. For a buffer from `allocateGradient` filled to its end through `filled`, the
   * answer is what `filled` saw.
   */
  check(gradient: Vector): GradientVerdict {
    this.checkShape(gradient);
    if (!this.backend.hasNonFinite(gradient)) return 'apply';
    if (this.config.nonFinite === 'skip') return 'skip';
    throw new OptimizerError(
      'OPTIMIZER_NON_FINITE_GRADIENT',
      'gradient: holds NaN or Infinity (policy NON_FINITE_POLICY_REJECT)',
      'gradient',
      'non-finite',
    );
  }

  /** Applies a gradient that `check` answered 'apply' for. */
  update(gradient: Vector): void {
    this.checkShape(gradient);
    const t = this.t + 1;
    const lr = learningRateAt(this.config.learningRate, t);
    const { clipValue, clipNorm } = this.config;
    let scale = 1;
    if (Number.isFinite(clipNorm)) {
      const norm = Math.sqrt(this.backend.sumSquares(gradient, clipValue));
      if (norm > clipNorm) scale = clipNorm / norm;
    }
    this.backend.apply(this.stepAt(t, lr), gradient, { clipValue, scale });
    this.t = t;
  }

  /** `check`, then `update` unless the gradient is skipped. */
  step(gradient: Vector): 'applied' | 'skipped' {
    if (this.check(gradient) === 'skip') return 'skipped';
    this.update(gradient);
    return 'applied';
  }

  /** A copy of the state, exact to the bit. */
  exportState(): OptimizerStateData {
    const live = this.stateView();
    return {
      ...live,
      slots: live.slots.map(({ name, values }) => ({ name, values: values.slice() })),
    };
  }

  /**
   * The state with its slots as live views of the optimizer's storage (no copy): valid until the
   * next update. For callers that copy it somewhere of their own (a checkpoint's snapshot).
   */
  stateView(): OptimizerStateData {
    const scalars: Record<string, number> = {};
    if (this.config.algorithm.kind === 'adam' || this.config.algorithm.kind === 'adamw') {
      scalars['beta1Power'] = this.beta1Power;
      scalars['beta2Power'] = this.beta2Power;
    }
    return {
      updates: this.t,
      slots: this.slotNames.map((name, i) => ({ name, values: this.backend.slots[i]! })),
      scalars,
    };
  }

  /** Frees the storage. The optimizer must not be used afterwards. */
  release(): void {
    this.backend.release();
  }

  private checkShape(gradient: Vector): void {
    const float32 = this.elementType === 'ELEMENT_TYPE_FLOAT32';
    if (float32 ? !(gradient instanceof Float32Array) : !(gradient instanceof Float64Array)) {
      throw new OptimizerError(
        'OPTIMIZER_LENGTH_MISMATCH',
        `gradient: a ${float32 ? 'Float32Array' : 'Float64Array'} is required for ${this.elementType}, got ${gradient.constructor.name}`,
        'gradient',
        gradient.constructor.name,
      );
    }
    if (gradient.length !== this.length) {
      throw new OptimizerError(
        'OPTIMIZER_LENGTH_MISMATCH',
        `gradient: ${gradient.length} elements, the parameter has ${this.length}`,
        'gradient',
        gradient.length,
      );
    }
  }

  private stepAt(t: number, lr: number): UpdateStep {
    const a = this.config.algorithm;
    switch (a.kind) {
      case 'sgd':
        return a.momentum > 0
          ? {
              rule: 'sgdMomentum',
              lr,
              momentum: a.momentum,
              nesterov: a.nesterov,
              weightDecay: a.weightDecay,
            }
          : { rule: 'sgd', lr, weightDecay: a.weightDecay };
      case 'adam':
      case 'adamw': {
        this.beta1Power *= a.beta1;
        this.beta2Power *= a.beta2;
        const correction2 = Math.sqrt(1 - this.beta2Power);
        return {
          rule: 'adam',
          lrT: (lr * correction2) / (1 - this.beta1Power),
          beta1: a.beta1,
          beta2: a.beta2,
          epsHat: a.epsilon * correction2,
          weightDecay: a.weightDecay,
          decay: 1 - lr * a.decoupledWeightDecay,
        };
      }
      case 'adagrad':
        return { rule: 'adagrad', lr, epsilon: a.epsilon, weightDecay: a.weightDecay };
      case 'adadelta':
        return { rule: 'adadelta', lr, rho: a.rho, epsilon: a.epsilon, weightDecay: a.weightDecay };
      case 'rmsprop':
        return {
          rule: 'rmsprop',
          lr,
          alpha: a.alpha,
          epsilon: a.epsilon,
          momentum: a.momentum,
          centered: a.centered,
          weightDecay: a.weightDecay,
        };
    }
  }

  private initializeSlots(): void {
    const a = this.config.algorithm;
    if (a.kind === 'adagrad' && a.initialAccumulator !== 0)
      this.backend.slots[0]!.fill(a.initialAccumulator);
  }

  private importState(state: OptimizerStateInput): void {
    if (!Number.isSafeInteger(state.updates) || state.updates < 0) {
      throw invalidState(`updates must be an integer ≥ 0, got ${describe(state.updates)}`);
    }
    const names = state.slots.map((slot) => slot.name);
    if (names.join() !== this.slotNames.join()) {
      throw invalidState(
        `slots [${names.join(', ')}] do not match ${this.config.algorithm.kind}'s [${this.slotNames.join(', ')}]`,
      );
    }
    const float32 = this.elementType === 'ELEMENT_TYPE_FLOAT32';
    state.slots.forEach((slot, i) => {
      let length: number;
      try {
        length = elementLength(slot.values, float32, `slot ${slot.name}`);
      } catch (err) {
        throw invalidState((err as Error).message);
      }
      if (length !== this.length) {
        throw invalidState(
          `slot ${slot.name} has ${length} elements, the parameter has ${this.length}`,
        );
      }
      copyInto(this.backend.slots[i]!, slot.values);
    });
    const kind = this.config.algorithm.kind;
    if (kind === 'adam' || kind === 'adamw') {
      const { beta1Power, beta2Power } = state.scalars;
      if (typeof beta1Power !== 'number' || typeof beta2Power !== 'number') {
        throw invalidState('scalars beta1Power and beta2Power are required for Adam');
      }
      this.beta1Power = beta1Power;
      this.beta2Power = beta2Power;
    }
    this.t = state.updates;
  }
}

/** The slot names of an algorithm's state, in storage order. */
function slotNamesOf(config: OptimizerConfig): string[] {
  const a = config.algorithm;
  switch (a.kind) {
    case 'sgd':
      return a.momentum > 0 ? ['momentum'] : [];
    case 'adam':
    case 'adamw':
      return ['m', 'v'];
    case 'adagrad':
      return ['accumulator'];
    case 'adadelta':
      return ['accumulator', 'delta'];
    case 'rmsprop':
      return ['square', ...(a.centered ? ['center'] : []), ...(a.momentum > 0 ? ['momentum'] : [])];
  }
}

function floatElementType(elementType: string): FloatElementType {
  if (elementType === 'ELEMENT_TYPE_FLOAT32' || elementType === 'ELEMENT_TYPE_FLOAT64')
    return elementType;
  throw new OptimizerError(
    'OPTIMIZER_UNSUPPORTED_ELEMENT_TYPE',
    `elementType: ${describe(elementType)} is not optimized (only ELEMENT_TYPE_FLOAT32 and ELEMENT_TYPE_FLOAT64 are); store it without an optimizer`,
    'elementType',
    elementType,
  );
}

/** The element count of values given as a typed array of the type or as raw bytes. */
function elementLength(values: Vector | Uint8Array, float32: boolean, field: string): number {
  const size = float32 ? 4 : 8;
  if (values instanceof Uint8Array) {
    if (values.byteLength % size !== 0) {
      throw new OptimizerError(
        'OPTIMIZER_LENGTH_MISMATCH',
        `${field}: ${values.byteLength} bytes is not a whole number of ${size}-byte elements`,
        field,
        values.byteLength,
      );
    }
    return values.byteLength / size;
  }
  if (float32 ? !(values instanceof Float32Array) : !(values instanceof Float64Array)) {
    throw new OptimizerError(
      'OPTIMIZER_LENGTH_MISMATCH',
      `${field}: a ${float32 ? 'Float32Array' : 'Float64Array'} or raw bytes are required, got ${values.constructor.name}`,
      field,
      values.constructor.name,
    );
  }
  return values.length;
}

function copyInto(target: Vector, source: Vector | Uint8Array): void {
  if (source instanceof Uint8Array)
    copyIntoShared(new Uint8Array(target.buffer, target.byteOffset, target.byteLength), 0, source);
  else target.set(source);
}
