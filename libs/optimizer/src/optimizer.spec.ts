import { randomVector, textbook } from '../test-support/textbook';
import type { OptimizerConfigInput } from './config';
import type { GradientBuffer } from './backends/backend';
import { Optimizer } from './optimizer';
import { stateFromMessage, stateToMessage } from './state';

type ElementType = 'ELEMENT_TYPE_FLOAT32' | 'ELEMENT_TYPE_FLOAT64';
type Storage = 'wasm' | 'js';

const variants: [string, ElementType, Storage][] = [
  ['float32, WebAssembly', 'ELEMENT_TYPE_FLOAT32', 'wasm'],
  ['float32, TypeScript', 'ELEMENT_TYPE_FLOAT32', 'js'],
  ['float64', 'ELEMENT_TYPE_FLOAT64', 'js'],
];

const configs: [string, OptimizerConfigInput][] = [
  ['plain SGD at rate 1', { learningRate: { base: 1 } }],
  ['SGD, lr 0.1, weight decay', { sgd: { weightDecay: 0.01 }, learningRate: { base: 0.1 } }],
  ['SGD with momentum', { sgd: { momentum: 0.9 }, learningRate: { base: 0.05 } }],
  [
    'SGD with Nesterov momentum and decay',
    { sgd: { momentum: 0.9, nesterov: true, weightDecay: 0.001 }, learningRate: { base: 0.05 } },
  ],
  ['Adam (defaults)', { adam: {}, learningRate: { base: 0.01 } }],
  [
    'Adam with L2 decay',
    {
      adam: { beta1: 0.8, beta2: 0.99, epsilon: 1e-6, weightDecay: 0.01 },
      learningRate: { base: 0.01 },
    },
  ],
  ['AdamW (defaults)', { adamw: {}, learningRate: { base: 0.01 } }],
  ['Adagrad', { adagrad: {}, learningRate: { base: 0.1 } }],
  [
    'Adagrad with decay and initial accumulator',
    { adagrad: { weightDecay: 0.01, initialAccumulator: 0.1 }, learningRate: { base: 0.1 } },
  ],
  ['Adadelta', { adadelta: {}, learningRate: { base: 1 } }],
  [
    'Adadelta with decay',
    { adadelta: { rho: 0.95, epsilon: 1e-6, weightDecay: 0.01 }, learningRate: { base: 0.5 } },
  ],
  ['RMSProp', { rmsprop: {}, learningRate: { base: 0.01 } }],
  [
    'RMSProp centered with momentum',
    {
      rmsprop: { centered: true, momentum: 0.9, weightDecay: 0.001 },
      learningRate: { base: 0.01 },
    },
  ],
  ['SGD, linear lr', { learningRate: { base: 0.1, linear: { decayA: 0.01, decayB: 0.02 } } }],
  ['Adam, step lr', { adam: {}, learningRate: { base: 0.1, step: { stepSize: 3, gamma: 0.5 } } }],
  [
    'Adam, cosine lr with warm-up',
    {
      adam: {},
      learningRate: { base: 0.1, cosine: { warmupSteps: 3, totalSteps: 8, minRate: 0.01 } },
    },
  ],
  ['SGD, clip by value', { clipValue: 0.3, learningRate: { base: 0.1 } }],
  ['Adam, clip by norm', { adam: {}, clipNorm: 0.5, learningRate: { base: 0.01 } }],
  [
    'momentum, clip by value then norm',
    { sgd: { momentum: 0.5 }, clipValue: 0.5, clipNorm: 1, learningRate: { base: 0.1 } },
  ],
];

const length = 37; // Not a multiple of 4: the SIMD kernels' padding is exercised.
const steps = 12;
const initial = randomVector(1, length);
const gradients = Array.from({ length: steps }, (_, t) => randomVector(100 + t, length, 2));

function create(
  elementType: ElementType,
  storage: Storage,
  config: OptimizerConfigInput,
): Optimizer {
  const values =
    elementType === 'ELEMENT_TYPE_FLOAT32'
      ? Float32Array.from(initial)
      : Float64Array.from(initial);
  return new Optimizer({
    elementType,
    values,
    config,
    storage: storage === 'js' ? 'js' : undefined,
  });
}

function gradient(elementType: ElementType, t: number): Float32Array | Float64Array {
  return elementType === 'ELEMENT_TYPE_FLOAT32'
    ? Float32Array.from(gradients[t]!)
    : Float64Array.from(gradients[t]!);
}

function bits(values: Float32Array | Float64Array): string {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('hex');
}

describe.each(variants)('%s', (_label, elementType, storage) => {
  // Float64 runs differ from the textbook only by operation order; float32 runs round every
  // operation to 24 bits, over 12 steps.
  const tolerance = elementType === 'ELEMENT_TYPE_FLOAT64' ? 1e-12 : 2e-5;

  it('runs on the kernels it was asked for', () => {
    const optimizer = create(elementType, storage, { learningRate: { base: 1 } });
    expect(optimizer.kernel).toBe(storage);
    optimizer.release();
  });

  it.each(configs)('%s matches the textbook formulas over 12 steps', (_name, config) => {
    const optimizer = create(elementType, storage, config);
    const expected = textbook(config, initial, gradients);
    for (let t = 0; t < steps; t++)
      expect(optimizer.step(gradient(elementType, t))).toBe('applied');
    expect(optimizer.updates).toBe(steps);
    const actual = Array.from(optimizer.values);
    actual.forEach((value, i) => {
      expect(Math.abs(value - expected[i]!)).toBeLessThanOrEqual(
        tolerance * Math.max(1, Math.abs(expected[i]!)),
      );
    });
    // The parameters moved: the test would notice an optimizer that does nothing.
    expect(actual.some((value, i) => Math.abs(value - initial[i]!) > 1e-3)).toBe(true);
    optimizer.release();
  });

  it.each(configs)(
    '%s: export, import and continue gives the same bits as never stopping',
    (_name, config) => {
      const straight = create(elementType, storage, config);
      for (let t = 0; t < steps; t++) straight.step(gradient(elementType, t));

      const first = create(elementType, storage, config);
      for (let t = 0; t < steps / 2; t++) first.step(gradient(elementType, t));
      // Through the wire form: slots as raw little-endian bytes.
      const message = stateToMessage(first.exportState());
      const copied = {
        ...message,
        slots: message.slots.map((slot) => ({
          name: slot.name,
          content: Uint8Array.from(slot.content),
        })),
      };
      const resumed = new Optimizer({
        elementType,
        values: first.values.slice(),
        config,
        state: stateFromMessage(copied),
        storage: storage === 'js' ? 'js' : undefined,
      });
      first.release();
      for (let t = steps / 2; t < steps; t++) resumed.step(gradient(elementType, t));

      expect(resumed.updates).toBe(steps);
      expect(bits(resumed.values)).toBe(bits(straight.values));
      expect(resumed.exportState().slots.map((s) => bits(s.values))).toEqual(
        straight.exportState().slots.map((s) => bits(s.values)),
      );
      straight.release();
      resumed.release();
    },
  );

  it('rejects a non-finite gradient before any byte changes (default policy)', () => {
    const optimizer = create(elementType, storage, { adam: {} });
    const before = bits(optimizer.values);
    const bad = gradient(elementType, 0);
    bad[length - 1] = Number.NaN;
    expect(() => optimizer.step(bad)).toThrow(
      expect.objectContaining({
        code: 'OPTIMIZER_NON_FINITE_GRADIENT',
        message: expect.stringContaining('NaN'),
      }),
    );
    bad[length - 1] = Number.POSITIVE_INFINITY;
    expect(() => optimizer.check(bad)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_NON_FINITE_GRADIENT' }),
    );
    expect(bits(optimizer.values)).toBe(before);
    expect(optimizer.updates).toBe(0);
    expect(optimizer.exportState().slots.every((slot) => slot.values.every((v) => v === 0))).toBe(
      true,
    );
    optimizer.release();
  });

  it('skips a non-finite gradient with the skip policy, and applies the next one', () => {
    const optimizer = create(elementType, storage, {
      nonFinite: 'NON_FINITE_POLICY_SKIP',
      learningRate: { base: 1 },
    });
    const before = bits(optimizer.values);
    const bad = gradient(elementType, 0);
    bad[0] = Number.NEGATIVE_INFINITY;
    expect(optimizer.step(bad)).toBe('skipped');
    expect(bits(optimizer.values)).toBe(before);
    expect(optimizer.step(gradient(elementType, 1))).toBe('applied');
    expect(bits(optimizer.values)).not.toBe(before);
    optimizer.release();
  });

  it('rejects a gradient of the wrong length or type, naming both sizes', () => {
    const optimizer = create(elementType, storage, { learningRate: { base: 1 } });
    const before = bits(optimizer.values);
    const short =
      elementType === 'ELEMENT_TYPE_FLOAT32'
        ? new Float32Array(length - 1)
        : new Float64Array(length - 1);
    expect(() => optimizer.step(short)).toThrow(
      `gradient: ${length - 1} elements, the parameter has ${length}`,
    );
    const otherType =
      elementType === 'ELEMENT_TYPE_FLOAT32' ? new Float64Array(length) : new Float32Array(length);
    expect(() => optimizer.step(otherType)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_LENGTH_MISMATCH' }),
    );
    expect(bits(optimizer.values)).toBe(before);
    optimizer.release();
  });

  it('updates in place from a buffer allocated next to the tensor', () => {
    const viaBuffer = create(elementType, storage, { adam: {} });
    const viaArray = create(elementType, storage, { adam: {} });
    const buffer = viaBuffer.allocateGradient();
    for (let t = 0; t < 3; t++) {
      buffer.values.set(gradient(elementType, t));
      viaBuffer.step(buffer.values);
      viaArray.step(gradient(elementType, t));
    }
    buffer.release();
    expect(bits(viaBuffer.values)).toBe(bits(viaArray.values));
    viaBuffer.release();
    viaArray.release();
  });
});

describe('hand-derived steps', () => {
  const run = (config: OptimizerConfigInput, p: number[], gs: number[][]): number[] => {
    const optimizer = new Optimizer({
      elementType: 'ELEMENT_TYPE_FLOAT64',
      values: Float64Array.from(p),
      config,
    });
    for (const g of gs) optimizer.step(Float64Array.from(g));
    return Array.from(optimizer.values);
  };

  it('SGD momentum 0.9, lr 0.1: v = −0.1, −0.19; p = 0.9, 0.71', () => {
    const [p] = run({ sgd: { momentum: 0.9 }, learningRate: { base: 0.1 } }, [1], [[1], [1]]);
    expect(p).toBeCloseTo(0.71, 14);
  });

  it('Nesterov 0.9, lr 0.1: p = 1 + (0.9·−0.1 − 0.1) = 0.81, then 0.81 + (0.9·−0.19 − 0.1) = 0.539', () => {
    const [p] = run(
      { sgd: { momentum: 0.9, nesterov: true }, learningRate: { base: 0.1 } },
      [1],
      [[1], [1]],
    );
    expect(p).toBeCloseTo(0.539, 14);
  });

  it('SGD weight decay 0.5, lr 0.1, g = 0: p = 2 − 0.1·(0 + 0.5·2) = 1.9', () => {
    expect(run({ sgd: { weightDecay: 0.5 }, learningRate: { base: 0.1 } }, [2], [[0]])).toEqual([
      1.9,
    ]);
  });

  it('Adam moves the first step by lr·g/(|g| + ε), about lr·sign(g) whatever the scale', () => {
    const [a, b] = run({ adam: {}, learningRate: { base: 0.1 } }, [1, 1], [[1e-3, -50]]);
    expect(a).toBeCloseTo(1 - 0.1 * (1e-3 / (1e-3 + 1e-8)), 14);
    expect(b).toBeCloseTo(1 + 0.1 * (50 / (50 + 1e-8)), 14);
  });

  it('Adagrad descends: g = 2, lr 0.5 gives p = 1 − 0.5·2/2 = 0.5 (PaddlePaddle ascended)', () => {
    expect(
      run({ adagrad: { epsilon: 1e-300 }, learningRate: { base: 0.5 } }, [1], [[2]])[0],
    ).toBeCloseTo(0.5, 14);
  });

  it('clips by the L2 norm of the block: (3, 4) has norm 5, clipped to 1 it is (0.6, 0.8)', () => {
    const [x, y] = run({ clipNorm: 1, learningRate: { base: 1 } }, [0, 0], [[3, 4]]);
    expect(x).toBeCloseTo(-0.6, 15);
    expect(y).toBeCloseTo(-0.8, 15);
  });

  it('clips by value before the norm: (3, −4) clipped to 1 is (1, −1)', () => {
    expect(run({ clipValue: 1, learningRate: { base: 1 } }, [0, 0], [[3, -4]])).toEqual([-1, 1]);
  });

  it('leaves a gradient under the norm bound alone', () => {
    expect(run({ clipNorm: 10, learningRate: { base: 1 } }, [0, 0], [[3, 4]])).toEqual([-3, -4]);
  });
});

describe('configuration and element types', () => {
  it('refuses integer and 16-bit element types with a typed error', () => {
    for (const elementType of [
      'ELEMENT_TYPE_INT32',
      'ELEMENT_TYPE_UINT64',
      'ELEMENT_TYPE_FLOAT16',
    ]) {
      expect(() => new Optimizer({ elementType, values: new Float32Array(4) })).toThrow(
        expect.objectContaining({
          code: 'OPTIMIZER_UNSUPPORTED_ELEMENT_TYPE',
          message: expect.stringContaining(elementType),
        }),
      );
    }
  });

  it('leaves the caller’s values untouched when the config is invalid', () => {
    const values = Float32Array.from([1, 2, 3]);
    expect(
      () =>
        new Optimizer({
          elementType: 'ELEMENT_TYPE_FLOAT32',
          values,
          config: { adam: { beta1: 1.5 } },
        }),
    ).toThrow('optimizer config: adam.beta1 must be in [0, 1), got 1.5');
    expect(Array.from(values)).toEqual([1, 2, 3]);
  });

  it('refuses a state that does not belong to the algorithm', () => {
    const adam = new Optimizer({
      elementType: 'ELEMENT_TYPE_FLOAT64',
      values: new Float64Array(3),
      config: { adam: {} },
    });
    adam.step(Float64Array.from([1, 2, 3]));
    expect(
      () =>
        new Optimizer({
          elementType: 'ELEMENT_TYPE_FLOAT64',
          values: new Float64Array(3),
          config: { adagrad: {} },
          state: adam.exportState(),
        }),
    ).toThrow("optimizer state: slots [m, v] do not match adagrad's [accumulator]");
  });
});

describe.each(variants)('a gradient filled in pieces, %s', (_label, elementType, storage) => {
  const elements = 5000;
  const bytesPerElement = elementType === 'ELEMENT_TYPE_FLOAT32' ? 4 : 8;

  function optimizer(config: OptimizerConfigInput = { adam: {} }): Optimizer {
    const values =
      elementType === 'ELEMENT_TYPE_FLOAT32'
        ? new Float32Array(elements).fill(0.5)
        : new Float64Array(elements).fill(0.5);
    return new Optimizer({
      elementType,
      values,
      config,
      storage: storage === 'js' ? 'js' : undefined,
    });
  }

  function source(bad?: { at: number; value: number }): Uint8Array {
    const values =
      elementType === 'ELEMENT_TYPE_FLOAT32'
        ? Float32Array.from(randomVector(3, elements))
        : Float64Array.from(randomVector(3, elements));
    if (bad) values[bad.at] = bad.value;
    return new Uint8Array(values.buffer);
  }

  /** Copies `bytes` into the buffer in pieces of the given sizes (cycled), calling `filled` after each. */
  function fill(buffer: GradientBuffer, bytes: Uint8Array, pieces: number[]): void {
    const target = new Uint8Array(buffer.values.buffer, buffer.values.byteOffset, bytes.length);
    for (let at = 0, i = 0; at < bytes.length; i++) {
      const end = Math.min(at + pieces[i % pieces.length]!, bytes.length);
      target.set(bytes.subarray(at, end), at);
      buffer.filled(end);
      at = end;
    }
  }

  it('catches a NaN written in the last piece', () => {
    const o = optimizer();
    const buffer = o.allocateGradient();
    fill(buffer, source({ at: elements - 1, value: Number.NaN }), [16 * 1024]);
    expect(() => o.check(buffer.values)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_NON_FINITE_GRADIENT' }),
    );
    buffer.release();
    o.release();
  });

  it.each([
    ['nothing bad', undefined],
    ['a NaN first', { at: 0, value: Number.NaN }],
    ['+Infinity across a piece boundary', { at: 17, value: Number.POSITIVE_INFINITY }],
    ['-Infinity mid-buffer', { at: 2501, value: Number.NEGATIVE_INFINITY }],
    ['a NaN last', { at: elements - 1, value: Number.NaN }],
  ])('in odd-sized pieces, gives the verdict of a full scan: %s', (_name, bad) => {
    const bytes = source(bad);
    const whole = optimizer({ adam: {}, nonFinite: 'NON_FINITE_POLICY_SKIP' });
    const expected = whole.check(
      elementType === 'ELEMENT_TYPE_FLOAT32'
        ? new Float32Array(bytes.buffer)
        : new Float64Array(bytes.buffer),
    );
    expect(expected).toBe(bad ? 'skip' : 'apply');
    for (const pieces of [[1], [3, 61, 64, 65], [70, 1], [1000, 7], [bytes.length]]) {
      const o = optimizer({ adam: {}, nonFinite: 'NON_FINITE_POLICY_SKIP' });
      const buffer = o.allocateGradient();
      fill(buffer, bytes, pieces);
      expect(o.check(buffer.values)).toBe(expected);
      buffer.release();
      o.release();
    }
    whole.release();
  });

  it('scans a buffer never passed to filled, and one filled only in part', () => {
    const o = optimizer();
    const buffer = o.allocateGradient();
    buffer.values.set(new Float32Array(elements).fill(1));
    buffer.values[elements - 1] = Number.NaN;
    expect(() => o.check(buffer.values)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_NON_FINITE_GRADIENT' }),
    );
    // Declared final up to a byte before the NaN: the rest is scanned at check time.
    buffer.filled((elements - 1) * bytesPerElement);
    expect(() => o.check(buffer.values)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_NON_FINITE_GRADIENT' }),
    );
    buffer.release();
    o.release();
  });

  it('skips a gradient with a NaN in a piece under the skip policy, then applies a good one', () => {
    const o = optimizer({ adam: {}, nonFinite: 'NON_FINITE_POLICY_SKIP' });
    const before = bits(o.values);
    const buffer = o.allocateGradient();
    fill(buffer, source({ at: 4000, value: Number.NaN }), [4096, 100]);
    expect(o.step(buffer.values)).toBe('skipped');
    expect(bits(o.values)).toBe(before);
    // Filled again, in one piece: a byte end not beyond the last one starts a new filling.
    fill(buffer, source(), [elements * bytesPerElement]);
    expect(o.step(buffer.values)).toBe('applied');
    expect(bits(o.values)).not.toBe(before);
    buffer.release();
    o.release();
  });

  it('refuses a byte end outside the buffer', () => {
    const o = optimizer();
    const buffer = o.allocateGradient();
    expect(() => buffer.filled(elements * bytesPerElement + 1)).toThrow(
      expect.objectContaining({
        code: 'OPTIMIZER_LENGTH_MISMATCH',
        message: `gradient: filled to byte ${elements * bytesPerElement + 1}, the buffer has ${elements * bytesPerElement} bytes`,
      }),
    );
    expect(() => buffer.filled(-1)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_LENGTH_MISMATCH' }),
    );
    buffer.release();
    o.release();
  });
});

describe('a WebAssembly gradient filled to its end', () => {
  function optimizer(): Optimizer {
    return new Optimizer({
      elementType: 'ELEMENT_TYPE_FLOAT32',
      values: new Float32Array(1000),
      config: { adam: {} },
    });
  }

  it('is checked from what filled saw, without reading it again', () => {
    const o = optimizer();
    const buffer = o.allocateGradient();
    buffer.values.fill(1);
    buffer.filled(4000);
    // Changed after being declared final: not seen (the contract of filled).
    buffer.values[10] = Number.NaN;
    expect(o.check(buffer.values)).toBe('apply');
    buffer.release();
    o.release();
  });

  it('is scanned again after an update, when refilled without filled', () => {
    const o = optimizer();
    const buffer = o.allocateGradient();
    buffer.values.fill(1);
    buffer.filled(4000);
    o.step(buffer.values);
    buffer.values[999] = Number.POSITIVE_INFINITY;
    expect(() => o.check(buffer.values)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_NON_FINITE_GRADIENT' }),
    );
    buffer.release();
    o.release();
  });
});
