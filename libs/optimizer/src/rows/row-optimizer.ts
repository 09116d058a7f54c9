import { OptimizerError } from '../errors';
import { learningRateAt } from '../learning-rate';
import {
  resolveRowOptimizerConfig,
  rowLayout,
  type RowLayout,
  type RowOptimizerConfig,
  type RowOptimizerConfigInput,
} from './row-config';
import { adagradRow, adamRow, rowwiseAdagradRow, sgdRow } from './row-kernels';

const f = Math.fround;

/**
 * The update rule of a sparse table's rows, for rows of `dim` float32 values followed by the
 * rule's state (`layout`). It holds no rows itself: `update` works on a caller's Float32Array
 * (a plain array or a view of an arena chunk) where row r starts at r × `layout.stride`.
 *
 * Float32 only: embedding tables are float32 (float64 tensors are dense, with `Optimizer`).
 */
/** One row's update at a fixed step: the row at `data[offset…]`, its gradient at `grads[at…]`. */
export type RowKernel = (
  data: Float32Array,
  offset: number,
  grads: Float32Array,
  at: number,
) => void;

export class RowOptimizer {
  readonly config: RowOptimizerConfig;
  readonly layout: RowLayout;
  /** The table step whose running products `tableBeta1Power` and `tableBeta2Power` hold. */
  private tableStep = 0;
  private tableBeta1Power = 1;
  private tableBeta2Power = 1;

  constructor(config: RowOptimizerConfigInput | null | undefined, dim: number) {
    if (!Number.isSafeInteger(dim) || dim < 1) {
      throw new OptimizerError(
        'OPTIMIZER_INVALID_CONFIG',
        `row optimizer: dim must be an integer ≥ 1, got ${String(dim)}`,
        'dim',
        dim,
      );
    }
    this.config = resolveRowOptimizerConfig(config);
    this.layout = rowLayout(this.config.rule, dim);
  }

  get dim(): number {
    return this.layout.dim;
  }

  /**
   * Writes the initial state of row `row` (its values are left as they are): accumulators at
   * `initialAccumulator`, Adam's moments at 0 and a row's β1ᵗ, β2ᵗ at 1 (t = 0).
   */
  initializeRow(data: Float32Array, row: number): void {
    const { stride, dim, stateFloats } = this.layout;
    this.checkRow(data, row);
    const start = row * stride + dim;
    const rule = this.config.rule;
    data.fill(
      rule.kind === 'adagrad' || rule.kind === 'rowwiseAdagrad' ? rule.initialAccumulator : 0,
      start,
      start + stateFloats,
    );
    if (rule.kind === 'adam' && rule.biasCorrection === 'row') {
      data[start + 2 * dim] = 1;
      data[start + 2 * dim + 1] = 1;
    }
  }

  /**
   * Applies `grads` (n × dim, row k's gradient at k × dim) to rows `rows[k]` of `data`, at table
   * step `step` (t ≥ 1, this update included; it sets the learning rate's policy and, for Adam
   * with table bias correction, the correction). A row listed twice is updated twice, in order:
   * callers merge duplicate ids first. Everything is checked before any float changes: shapes
   * and row indices (OPTIMIZER_LENGTH_MISMATCH), the step (OPTIMIZER_INVALID_STATE) and the
   * gradients (NaN or ±Infinity: OPTIMIZER_NON_FINITE_GRADIENT).
   */
  update(data: Float32Array, rows: Int32Array, grads: Float32Array, step: number): void {
    const { dim, stride } = this.layout;
    this.checkBatch(data, rows, grads, step);
    const kernel = this.kernelAt(step);
    for (let k = 0; k < rows.length; k++) kernel(data, rows[k]! * stride, grads, k * dim);
  }

  /**
   * The update of one row at table step `step`, with everything that depends only on the step
   * (learning rate, Adam's table correction) computed once: `kernel(data, offset, grads, at)`
   * updates the row whose values start at `data[offset]` with the gradient at `grads[at]`. It
   * checks nothing — `update` is the checked form; a caller that validated its rows and
   * gradients (a table's push) calls it per row without allocating.
   */
  kernelAt(step: number): RowKernel {
    const { dim } = this.layout;
    const lr = learningRateAt(this.config.learningRate, step);
    const lr32 = f(lr);
    const rule = this.config.rule;
    switch (rule.kind) {
      case 'sgd':
        return (data, o, grads, g) => sgdRow(data, o, grads, g, dim, lr32);
      case 'adagrad': {
        const eps = f(rule.epsilon);
        return (data, o, grads, g) => adagradRow(data, o, grads, g, dim, lr32, eps);
      }
      case 'rowwiseAdagrad': {
        const eps = f(rule.epsilon);
        return (data, o, grads, g) => rowwiseAdagradRow(data, o, grads, g, dim, lr32, eps);
      }
      case 'adam': {
        const b1 = f(rule.beta1);
        const omb1 = f(1 - rule.beta1);
        const b2 = f(rule.beta2);
        const omb2 = f(1 - rule.beta2);
        if (rule.biasCorrection === 'table') {
          this.advanceTableTo(step);
          const correction2 = Math.sqrt(1 - this.tableBeta2Power);
          const lrT = f((lr * correction2) / (1 - this.tableBeta1Power));
          const epsHat = f(rule.epsilon * correction2);
          return (data, o, grads, g) =>
            adamRow(data, o, grads, g, dim, b1, omb1, b2, omb2, lrT, epsHat);
        }
        // Row bias correction: the row's own β1ᵗ and β2ᵗ, float32 products, after m and v.
        const epsilon = rule.epsilon;
        return (data, o, grads, g) => {
          const p = o + 3 * dim;
          const beta1Power = f(data[p]! * b1);
          const beta2Power = f(data[p + 1]! * b2);
          data[p] = beta1Power;
          data[p + 1] = beta2Power;
          const correction2 = Math.sqrt(1 - beta2Power);
          const lrT = f((lr * correction2) / (1 - beta1Power));
          const epsHat = f(epsilon * correction2);
          adamRow(data, o, grads, g, dim, b1, omb1, b2, omb2, lrT, epsHat);
        };
      }
    }
  }

  /**
   * Brings the table's β1ᵗ and β2ᵗ to `step` as float64 running products of t factors, the
   * dense `Optimizer`'s. Steps move forward in small increments; after a jump (a restored table)
   * the products restart from t = 0, and stop multiplying once 1 − βᵗ is exactly 1 in float64,
   * from where on every later t gives the same correction: so at most a few hundred thousand
   * multiplications, once.
   */
  private advanceTableTo(step: number): void {
    const rule = this.config.rule;
    if (rule.kind !== 'adam') return;
    if (step < this.tableStep) {
      this.tableStep = 0;
      this.tableBeta1Power = 1;
      this.tableBeta2Power = 1;
    }
    while (this.tableStep < step) {
      if (1 - this.tableBeta1Power === 1 && 1 - this.tableBeta2Power === 1) {
        this.tableStep = step;
        break;
      }
      this.tableBeta1Power *= rule.beta1;
      this.tableBeta2Power *= rule.beta2;
      this.tableStep++;
    }
  }

  private checkRow(data: Float32Array, row: number): void {
    if (!(data instanceof Float32Array)) {
      throw lengthMismatch('data', `a Float32Array is required, got ${describeType(data)}`, data);
    }
    const rowCount = Math.floor(data.length / this.layout.stride);
    if (!Number.isInteger(row) || row < 0 || row >= rowCount) {
      throw lengthMismatch(
        'rows',
        `row ${String(row)} is outside the ${rowCount} rows of data (${data.length} floats, stride ${this.layout.stride})`,
        row,
      );
    }
  }

  private checkBatch(data: Float32Array, rows: Int32Array, grads: Float32Array, step: number) {
    const { dim, stride } = this.layout;
    if (!(data instanceof Float32Array)) {
      throw lengthMismatch('data', `a Float32Array is required, got ${describeType(data)}`, data);
    }
    if (!(rows instanceof Int32Array)) {
      throw lengthMismatch('rows', `an Int32Array is required, got ${describeType(rows)}`, rows);
    }
    if (!(grads instanceof Float32Array)) {
      throw lengthMismatch(
        'grads',
        `a Float32Array is required, got ${describeType(grads)}`,
        grads,
      );
    }
    if (grads.length !== rows.length * dim) {
      throw lengthMismatch(
        'grads',
        `${grads.length} floats, ${rows.length} rows of dim ${dim} need ${rows.length * dim}`,
        grads.length,
      );
    }
    const rowCount = Math.floor(data.length / stride);
    for (let k = 0; k < rows.length; k++) {
      const row = rows[k]!;
      if (row < 0 || row >= rowCount) {
        throw lengthMismatch(
          'rows',
          `row ${row} (entry ${k}) is outside the ${rowCount} rows of data (${data.length} floats, stride ${stride})`,
          row,
        );
      }
    }
    if (!Number.isSafeInteger(step) || step < 1) {
      throw new OptimizerError(
        'OPTIMIZER_INVALID_STATE',
        `optimizer state: the table step must be an integer ≥ 1, got ${String(step)}`,
        'step',
        step,
      );
    }
    for (let i = 0; i < grads.length; i++) {
      if (!Number.isFinite(grads[i]!)) {
        throw new OptimizerError(
          'OPTIMIZER_NON_FINITE_GRADIENT',
          `grads: element ${i} (row entry ${Math.floor(i / dim)}) is ${String(grads[i])}`,
          'grads',
          'non-finite',
        );
      }
    }
  }
}

function lengthMismatch(field: string, reason: string, value: unknown): OptimizerError {
  return new OptimizerError('OPTIMIZER_LENGTH_MISMATCH', `${field}: ${reason}`, field, value);
}

function describeType(value: unknown): string {
  return value === null || value === undefined
    ? String(value)
    : ((value as object).constructor?.name ?? typeof value);
}
