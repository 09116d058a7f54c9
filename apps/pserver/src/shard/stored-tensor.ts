import type { SnapshotBuffers, TensorSnapshot } from '@pserver/checkpoint';
import {
  legacyLearningRate,
  Optimizer,
  resolveOptimizerConfig,
  stateFromMessage,
  type GradientBuffer,
  type TensorMemory,
} from '@pserver/optimizer';
import {
  elementSizes,
  type ElementTypeName,
  type OptimizerConfig__Output,
  type TensorRecord__Output,
} from '@pserver/proto';
import { PserverError } from './errors';
import { elementTypeOf, toFloatArray } from './tensor-bytes';

export type FloatTypeName = 'ELEMENT_TYPE_FLOAT32' | 'ELEMENT_TYPE_FLOAT64';

export function isFloatType(elementType: ElementTypeName): elementType is FloatTypeName {
  return elementType === 'ELEMENT_TYPE_FLOAT32' || elementType === 'ELEMENT_TYPE_FLOAT64';
}

/**
 * One tensor or block held by the shard. Float32 and float64 tensors are optimized (their values
 * live in the optimizer's storage); other types are stored and returned as they came.
 */
export class StoredTensor {
  private constructor(
    readonly name: string,
    readonly elementType: ElementTypeName,
    readonly shape: readonly number[],
    readonly byteLength: number,
    /**
     * The configuration as InitParam gave it, with the learning rate it resolved to written in
     * (`learningRate.base`), kept for checkpoints and ListParams: a tensor keeps its rate even
     * if a later version changes the rule's default. Null for stored (integer) tensors.
     */
    readonly config: OptimizerConfig__Output | null,
    private readonly optimizer: Optimizer | undefined,
    private readonly raw: Uint8Array | undefined,
  ) {}

  /** Runs once before the next write or release: a snapshot taken copy-on-write copies first. */
  private beforeWrite: (() => void) | undefined;

  /**
   * Checks an optimizer config for a tensor of this type without creating anything: a stored-only
   * type takes none (PSERVER_NOT_OPTIMIZABLE), a float type a valid one (OptimizerError).
   */
  static checkConfig(
    name: string,
    elementType: ElementTypeName,
    config: OptimizerConfig__Output | null,
  ): void {
    if (isFloatType(elementType)) {
      resolveOptimizerConfig(config);
      return;
    }
    if (
      config &&
      Object.values(config).some(
        (v) => v !== null && v !== undefined && v !== 'NON_FINITE_POLICY_REJECT',
      )
    ) {
      throw new PserverError(
        'PSERVER_NOT_OPTIMIZABLE',
        `optimizer: ${name} is ${elementType}, which is stored, not optimized: leave the optimizer config empty`,
      );
    }
  }

  /** Creates a tensor from InitParam's bytes. Throws OptimizerError for a bad config. */
  static create(options: {
    name: string;
    elementType: ElementTypeName;
    shape: readonly number[];
    content: Uint8Array;
    config: OptimizerConfig__Output | null;
    memory: TensorMemory | undefined;
  }): StoredTensor {
    const { name, elementType, shape, content, config, memory } = options;
    StoredTensor.checkConfig(name, elementType, config);
    if (!isFloatType(elementType)) {
      return new StoredTensor(
        name,
        elementType,
        shape,
        content.byteLength,
        null,
        undefined,
        Uint8Array.from(content),
      );
    }
    const optimizer = new Optimizer({
      elementType,
      values: toFloatArray(content, elementType),
      config,
      storage: memory,
    });
    return new StoredTensor(
      name,
      elementType,
      shape,
      content.byteLength,
      withLearningRate(config, optimizer.config.learningRate.base),
      optimizer,
      undefined,
    );
  }

  /** Rebuilds a tensor, with its optimizer's exact state, from a checkpoint record. */
  static restore(record: TensorRecord__Output, memory: TensorMemory | undefined): StoredTensor {
    const tensor = record.tensor!;
    const elementType = elementTypeOf(
      tensor.elementType,
      `checkpoint record ${tensor.name}: elementType`,
    );
    const bytes = tensor.content.byteLength;
    if (!isFloatType(elementType)) {
      return new StoredTensor(
        tensor.name,
        elementType,
        tensor.shape,
        bytes,
        null,
        undefined,
        Uint8Array.from(tensor.content),
      );
    }
    // A config without a rate was written before the rules had their own defaults, when every
    // unset rate was 1: the tensor keeps that rate.
    const config =
      record.optimizer?.learningRate?.base === undefined
        ? withLearningRate(record.optimizer, legacyLearningRate)
        : record.optimizer;
    // Values and slots are copied from the record's bytes straight into the optimizer's storage.
    const optimizer = new Optimizer({
      elementType,
      values: tensor.content,
      config,
      state: record.state ? stateFromMessage(record.state) : undefined,
      storage: memory,
    });
    return new StoredTensor(
      tensor.name,
      elementType,
      tensor.shape,
      bytes,
      config,
      optimizer,
      undefined,
    );
  }

  /** A copy of the tensor, its config and its optimizer's state, in `buffers`, for a checkpoint. */
  snapshot(buffers: SnapshotBuffers): TensorSnapshot {
    const view = (array: ArrayBufferView): Uint8Array =>
      new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    const state = this.optimizer?.stateView();
    return {
      tensor: {
        name: this.name,
        elementType: this.elementType,
        shape: [...this.shape],
        content: buffers.copy(this.optimizer ? view(this.optimizer.values) : this.raw!),
      },
      optimizer: this.config,
      state: state
        ? {
            updates: state.updates,
            slots: state.slots.map((slot) => ({
              name: slot.name,
              content: buffers.copy(view(slot.values)),
            })),
            scalars: state.scalars,
          }
        : null,
    };
  }

  get optimizable(): boolean {
    return this.optimizer !== undefined;
  }

  get elements(): number {
    return this.byteLength / elementSizes[this.elementType];
  }

  /** Updates applied (t). */
  get updates(): number {
    return this.optimizer?.updates ?? 0;
  }

  get algorithm(): string {
    return this.optimizer?.config.algorithm.kind ?? 'none';
  }

  /** The current values, copied (a reply may be serialized after later updates). */
  content(): Buffer {
    return Buffer.from(this.bytes());
  }

  /**
   * The current values' bytes as a live view of the tensor: the next update changes them, so a
   * caller copies them before it yields.
   */
  bytes(): Uint8Array {
    if (!this.optimizer) return this.raw!;
    const values = this.optimizer.values;
    return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  }

  /** A gradient-sized buffer next to the values; fill its bytes, then `check` and `apply`. */
  allocateGradient(): GradientBuffer {
    return this.requireOptimizer().allocateGradient();
  }

  check(gradient: GradientBuffer): 'apply' | 'skip' {
    return this.requireOptimizer().check(gradient.values);
  }

  apply(gradient: GradientBuffer): void {
    this.writing();
    this.requireOptimizer().update(gradient.values);
  }

  release(): void {
    this.writing();
    this.optimizer?.release();
  }

  /**
   * Has `copy` run once, just before the tensor's values or state next change or its memory is
   * released, unless `copyBeforeWrite(undefined)` drops it first: how a snapshot taken
   * copy-on-write keeps the tensor as it was when the snapshot began.
   */
  copyBeforeWrite(copy: (() => void) | undefined): void {
    if (copy && this.beforeWrite)
      throw new Error(`tensor ${this.name}: a snapshot's copy-on-write is already pending`);
    this.beforeWrite = copy;
  }

  private writing(): void {
    const copy = this.beforeWrite;
    this.beforeWrite = undefined;
    copy?.();
  }

  private requireOptimizer(): Optimizer {
    if (!this.optimizer) {
      throw new PserverError(
        'PSERVER_NOT_OPTIMIZABLE',
        `gradient ${this.name}: ${this.elementType} tensors are stored, not optimized`,
      );
    }
    return this.optimizer;
  }
}

/** `config` (null: empty) with `learningRate.base` set to `base`, the rest as it was. */
function withLearningRate(
  config: OptimizerConfig__Output | null,
  base: number,
): OptimizerConfig__Output {
  const c = config ?? { learningRate: null, nonFinite: 'NON_FINITE_POLICY_REJECT' };
  return { ...c, learningRate: { ...c.learningRate, base, _base: 'base' } };
}
