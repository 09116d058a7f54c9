import { randomVector } from '../../test-support/textbook';
import type { OptimizerConfigInput } from '../config';
import { Optimizer } from '../optimizer';
import type { RowOptimizerConfigInput } from './row-config';
import { RowOptimizer } from './row-optimizer';

function bits(values: Float32Array): string {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('hex');
}

/** A matrix of `rows` × `dim` values as a table of `stride` floats a row, state initialized. */
function tableOf(optimizer: RowOptimizer, matrix: Float32Array, rows: number): Float32Array {
  const { dim, stride } = optimizer.layout;
  const data = new Float32Array(rows * stride);
  for (let r = 0; r < rows; r++) {
    data.set(matrix.subarray(r * dim, (r + 1) * dim), r * stride);
    optimizer.initializeRow(data, r);
  }
  return data;
}

/** The values and each slot of a table, gathered into dense arrays of rows × dim. */
function gather(optimizer: RowOptimizer, data: Float32Array, rows: number): Float32Array[] {
  const { dim, stride, slots } = optimizer.layout;
  return [0, ...slots.map((s) => s.offset)].map((offset) => {
    const out = new Float32Array(rows * dim);
    for (let r = 0; r < rows; r++)
      out.set(data.subarray(r * stride + offset, r * stride + offset + dim), r * dim);
    return out;
  });
}

describe('RowOptimizer on every row of a matrix', () => {
  const rows = 6;
  const dim = 7;
  const cases: [string, RowOptimizerConfigInput, OptimizerConfigInput][] = [
    ['sgd', { sgd: {}, learningRate: { base: 0.05 } }, { sgd: {}, learningRate: { base: 0.05 } }],
    [
      'adagrad',
      { adagrad: { initialAccumulator: 0.1 }, learningRate: { base: 0.1 } },
      { adagrad: { initialAccumulator: 0.1 }, learningRate: { base: 0.1 } },
    ],
    [
      'adam, table bias correction',
      { adam: { beta2: 0.99 }, learningRate: { base: 0.01, linear: { decayA: 1e-4 } } },
      { adam: { beta2: 0.99 }, learningRate: { base: 0.01, linear: { decayA: 1e-4 } } },
    ],
  ];

  it.each(cases)(
    '%s: the same bits as the dense rule on the matrix, over 8 steps',
    (_name, rowConfig, denseConfig) => {
      const matrix = Float32Array.from(randomVector(7, rows * dim, 2));
      const dense = new Optimizer({
        elementType: 'ELEMENT_TYPE_FLOAT32',
        values: matrix,
        config: denseConfig,
        storage: 'js',
      });
      const sparse = new RowOptimizer(rowConfig, dim);
      const data = tableOf(sparse, matrix, rows);
      // Rows listed out of order: each row's update touches only that row.
      const order = Int32Array.from([3, 0, 5, 1, 4, 2]);
      for (let t = 1; t <= 8; t++) {
        const scale = [1, 1e-3, 1e3, 1e-42, 20, 0, 1e18, 1e-30][t - 1]!;
        const gradient = Float32Array.from(randomVector(100 + t, rows * dim, scale));
        dense.update(gradient);
        const grads = new Float32Array(rows * dim);
        order.forEach((r, k) => grads.set(gradient.subarray(r * dim, (r + 1) * dim), k * dim));
        sparse.update(data, order, grads, t);
      }
      const [values, ...slots] = gather(sparse, data, rows);
      expect(bits(values!)).toBe(bits(dense.values as Float32Array));
      expect(slots.map(bits)).toEqual(
        dense.exportState().slots.map((s) => bits(s.values as Float32Array)),
      );
      expect(bits(values!)).not.toBe(bits(matrix));
    },
  );
});

describe('RowOptimizer', () => {
  const dim = 4;

  it('leaves rows not listed as they are, state included', () => {
    const optimizer = new RowOptimizer({ adam: { biasCorrection: 'row' } }, dim);
    const data = tableOf(optimizer, Float32Array.from(randomVector(1, 3 * dim)), 3);
    const before = data.slice();
    optimizer.update(data, Int32Array.from([1]), new Float32Array(dim).fill(0.5), 1);
    const { stride } = optimizer.layout;
    expect(bits(data.subarray(0, stride))).toBe(bits(before.subarray(0, stride)));
    expect(bits(data.subarray(2 * stride))).toBe(bits(before.subarray(2 * stride)));
    expect(bits(data.subarray(stride, 2 * stride))).not.toBe(
      bits(before.subarray(stride, 2 * stride)),
    );
  });

  it('corrects Adam by the table step, or by the row’s own updates', () => {
    // A row first updated at table step 1000, gradient 1: with the row's own correction its
    // first step is Adam's first step, lr; with the table's, m = 0.1 and v = 0.001 are taken as
    // long-run averages (1 − β1ᵗ ≈ 1, 1 − β2ᵗ ≈ 0.63), which makes it about 2.5 × lr.
    const first = (biasCorrection: 'table' | 'row'): number => {
      const optimizer = new RowOptimizer({ adam: { biasCorrection } }, dim);
      const data = tableOf(optimizer, new Float32Array(dim), 1);
      optimizer.update(data, Int32Array.from([0]), new Float32Array(dim).fill(1), 1000);
      return data[0]!;
    };
    expect(first('row')).toBeCloseTo(-1e-3, 6);
    expect(first('table')).toBeCloseTo(
      -1e-3 * Math.sqrt(1 - 0.999 ** 1000) * (0.1 / Math.sqrt(0.001)),
      6,
    );
    const optimizer = new RowOptimizer({ adam: { biasCorrection: 'row', beta1: 0.5 } }, dim);
    const data = tableOf(optimizer, new Float32Array(dim), 1);
    optimizer.update(data, Int32Array.from([0]), new Float32Array(dim).fill(1), 7);
    optimizer.update(data, Int32Array.from([0]), new Float32Array(dim).fill(1), 9);
    expect([data[3 * dim], data[3 * dim + 1]]).toEqual([
      0.25,
      Math.fround(Math.fround(0.999) ** 2),
    ]);
  });

  it('gives the same bits whether the table steps one by one or jumps (a restored table)', () => {
    const run = (warmup: number[]): string => {
      const optimizer = new RowOptimizer({ adam: { beta1: 0.8, beta2: 0.9 } }, dim);
      const data = tableOf(optimizer, Float32Array.from(randomVector(3, 2 * dim)), 2);
      // Updates of row 1 at other steps move only the table's products, never row 0.
      for (const t of warmup)
        optimizer.update(data, Int32Array.from([1]), new Float32Array(dim), t);
      optimizer.update(data, Int32Array.from([0]), Float32Array.from(randomVector(4, dim)), 400);
      return bits(data.subarray(0, dim));
    };
    const direct = run([]);
    expect(run([1, 2, 3, 399])).toBe(direct);
    expect(run([500])).toBe(direct); // a step back restarts the products
  });

  it('applies a row listed twice twice, in order', () => {
    const optimizer = new RowOptimizer({ sgd: {}, learningRate: { base: 1 } }, 2);
    const data = new Float32Array([1, 1]);
    optimizer.update(data, Int32Array.from([0, 0]), new Float32Array([0.25, 0.5, 0.25, 0.5]), 1);
    expect([...data]).toEqual([0.5, 0]);
  });

  it.each<[string, (o: RowOptimizer, data: Float32Array) => void, object]>([
    [
      'a row outside the data',
      (o, data) => o.update(data, Int32Array.from([0, 3]), new Float32Array(2 * dim), 1),
      { code: 'OPTIMIZER_LENGTH_MISMATCH', field: 'rows', value: 3 },
    ],
    [
      'a negative row',
      (o, data) => o.update(data, Int32Array.from([-1]), new Float32Array(dim), 1),
      { code: 'OPTIMIZER_LENGTH_MISMATCH', field: 'rows', value: -1 },
    ],
    [
      'gradients of another length',
      (o, data) => o.update(data, Int32Array.from([0, 1]), new Float32Array(dim), 1),
      { code: 'OPTIMIZER_LENGTH_MISMATCH', field: 'grads', value: dim },
    ],
    [
      'float64 gradients',
      (o, data) =>
        o.update(data, Int32Array.from([0]), new Float64Array(dim) as unknown as Float32Array, 1),
      { code: 'OPTIMIZER_LENGTH_MISMATCH', field: 'grads' },
    ],
    [
      'a step of 0',
      (o, data) => o.update(data, Int32Array.from([0]), new Float32Array(dim), 0),
      { code: 'OPTIMIZER_INVALID_STATE', field: 'step', value: 0 },
    ],
    [
      'a NaN in the last row’s gradient',
      (o, data) =>
        o.update(data, Int32Array.from([0, 1]), new Float32Array(2 * dim).fill(1).fill(NaN, -1), 1),
      { code: 'OPTIMIZER_NON_FINITE_GRADIENT', field: 'grads' },
    ],
  ])('refuses %s and changes nothing', (_what, call, error) => {
    const optimizer = new RowOptimizer({ adagrad: {} }, dim);
    const data = tableOf(optimizer, Float32Array.from(randomVector(5, 3 * dim)), 3);
    const before = bits(data);
    expect(() => call(optimizer, data)).toThrow(expect.objectContaining(error));
    expect(bits(data)).toBe(before);
  });

  it('refuses a dim below 1', () => {
    expect(() => new RowOptimizer({ adagrad: {} }, 0)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_INVALID_CONFIG', field: 'dim' }),
    );
  });
});
