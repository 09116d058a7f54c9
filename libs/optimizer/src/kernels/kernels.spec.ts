import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { randomVector } from '../../test-support/textbook';
import type { OptimizerConfigInput } from '../config';
import { TensorMemory, type Float32Block } from '../memory/tensor-memory';
import { Optimizer } from '../optimizer';
import { sumSquares as referenceSumSquares } from './reference-kernels';

// The WebAssembly kernels perform the float32 operations of the TypeScript reference loops in
// the same order, so both must give the same bits: the tolerance here is zero.
const rules: [string, OptimizerConfigInput][] = [
  ['sgd', { learningRate: { base: 0.01 } }],
  ['sgd, weight decay', { sgd: { weightDecay: 0.1 }, learningRate: { base: 0.01 } }],
  ['momentum', { sgd: { momentum: 0.9, weightDecay: 0.01 }, learningRate: { base: 0.01 } }],
  ['nesterov', { sgd: { momentum: 0.9, nesterov: true }, learningRate: { base: 0.01 } }],
  ['adam', { adam: { weightDecay: 0.01 }, learningRate: { base: 0.001 } }],
  ['adamw', { adamw: { weightDecay: 0.1 }, learningRate: { base: 0.001 } }],
  [
    'adagrad',
    { adagrad: { weightDecay: 0.01, initialAccumulator: 0.1 }, learningRate: { base: 0.1 } },
  ],
  ['adadelta', { adadelta: { weightDecay: 0.01 } }],
  ['rmsprop', { rmsprop: {}, learningRate: { base: 0.01 } }],
  ['rmsprop centered', { rmsprop: { centered: true }, learningRate: { base: 0.01 } }],
  ['rmsprop momentum', { rmsprop: { momentum: 0.9 }, learningRate: { base: 0.01 } }],
  ['rmsprop centered momentum', { rmsprop: { centered: true, momentum: 0.5, weightDecay: 0.01 } }],
  ['clip by value', { adam: {}, clipValue: 0.25 }],
  ['clip by norm', { sgd: { momentum: 0.9 }, clipNorm: 3, learningRate: { base: 0.5 } }],
  ['clip by value and norm', { adagrad: {}, clipValue: 0.5, clipNorm: 2 }],
];

function bits(values: Float32Array | Float64Array): string {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('hex');
}

describe.each([1, 3, 4, 5, 1023, 4097])(
  'WebAssembly and TypeScript float32 kernels, length %i',
  (length) => {
    it.each(rules)('%s: the same bits after 5 steps', (_name, config) => {
      // Gradients over many magnitudes, subnormals included.
      const initial = Float32Array.from(randomVector(length, length, 3));
      const run = (storage: 'js' | undefined): Optimizer => {
        const optimizer = new Optimizer({
          elementType: 'ELEMENT_TYPE_FLOAT32',
          values: initial,
          config,
          storage,
        });
        for (let t = 0; t < 5; t++) {
          const scale = [1, 1e-3, 1e3, 1e-42, 20][t]!;
          optimizer.step(Float32Array.from(randomVector(1000 * length + t, length, scale)));
        }
        return optimizer;
      };
      const wasm = run(undefined);
      const js = run('js');
      expect(wasm.kernel).toBe('wasm');
      expect(bits(wasm.values)).toBe(bits(js.values));
      expect(wasm.exportState().slots.map((s) => bits(s.values))).toEqual(
        js.exportState().slots.map((s) => bits(s.values)),
      );
      expect(bits(wasm.values)).not.toBe(bits(initial));
      wasm.release();
    });
  },
);

// Float32 values where clipping, signed zeros and rounding are easiest to get wrong: zeros of both
// signs, subnormals, the largest float32, values that overflow when squared.
const specials = [
  0, -0, 1e-45, -1e-45, 5e-40, -1.1754942e-38, 1e-30, -1e-20, 0.25, -1, 3.4028235e38, -3.4028235e38,
  1e30, -2e19, 65504, -1e-3,
];

/** Every other element one of the specials, the rest random over many magnitudes. */
function specialVector(seed: number, length: number): Float32Array {
  const random = randomVector(seed, length, 1);
  return Float32Array.from(random, (r, i) =>
    i % 2 === 0 ? specials[(i / 2 + seed) % specials.length]! : r * 10 ** Math.round(r * 30),
  );
}

/**
 * The bits, with every NaN written as NaN: IEEE 754 arithmetic leaves a NaN's sign and payload
 * open, and JavaScript does not keep them, so only NaN-ness is compared (huge values can overflow
 * to ±Infinity and then meet an opposite infinity).
 */
function bitsUpToNaN(values: Float32Array): string[] {
  const words = new Uint32Array(values.buffer, values.byteOffset, values.length);
  return Array.from(values, (v, i) => (Number.isNaN(v) ? 'NaN' : words[i]!.toString(16)));
}

const specialRules: [string, OptimizerConfigInput][] = [
  ...rules,
  ['momentum, no decay', { sgd: { momentum: 0.5 }, learningRate: { base: 0.1 } }],
  ['adam, no decay', { adam: {}, learningRate: { base: 0.01 } }],
  ['adagrad, no decay', { adagrad: {}, learningRate: { base: 0.1 } }],
  // 1e-50 rounds to +0 in float32: every element is clipped to a zero of its own sign (the
  // decay moves the values).
  ['clip value rounding to +0', { adam: { weightDecay: 0.1 }, clipValue: 1e-50 }],
  // 1e39 rounds to +Infinity in float32: clipping by value changes nothing.
  [
    'clip value beyond float32',
    { sgd: { momentum: 0.9 }, clipValue: 1e39, learningRate: { base: 0.1 } },
  ],
  ['clip by norm only', { adam: { weightDecay: 0.1 }, clipNorm: 1e-3 }],
];

/** An arena of shared memory, as where a private one cannot be had: the other build of the kernels. */
const sharedArenas = new TensorMemory('shared');

describe.each([
  [37, undefined],
  [1029, undefined],
  [1029, sharedArenas],
] as const)('special values, WebAssembly and TypeScript, length %i', (length, arenas) => {
  it.each(specialRules)('%s: the same bits after 4 steps', (_name, config) => {
    const initial = specialVector(length, length);
    const run = (storage: 'js' | TensorMemory | undefined): Optimizer => {
      const optimizer = new Optimizer({
        elementType: 'ELEMENT_TYPE_FLOAT32',
        values: initial,
        config,
        storage,
      });
      for (let t = 0; t < 4; t++) optimizer.update(specialVector(7 * length + t, length));
      return optimizer;
    };
    const wasm = run(arenas);
    const js = run('js');
    expect(wasm.kernel).toBe('wasm');
    expect(bitsUpToNaN(wasm.values as Float32Array)).toEqual(
      bitsUpToNaN(js.values as Float32Array),
    );
    expect(wasm.exportState().slots.map((s) => bitsUpToNaN(s.values as Float32Array))).toEqual(
      js.exportState().slots.map((s) => bitsUpToNaN(s.values as Float32Array)),
    );
    expect(bitsUpToNaN(wasm.values as Float32Array)).not.toEqual(bitsUpToNaN(initial));
    wasm.release();
  });
});

describe('kernels on their own', () => {
  const memory = new TensorMemory();
  const edges = [...specials, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
  const float32 = (values: number[]): Float32Block => {
    const [block] = memory.allocate([values.length], 'padding');
    block!.values.set(values);
    return block!;
  };
  const word = (v: number): string =>
    Number.isNaN(v) ? 'NaN' : new Uint32Array(Float32Array.of(v).buffer)[0]!.toString(16);

  it.each([0, 1e-45, 0.25, 1, 3.4028235e38, Number.POSITIVE_INFINITY])(
    'clip at %d: the bits of min(max(g, −cv), cv)·s for every edge value',
    (cv) => {
      const g = float32(edges);
      const x = float32(edges.map(() => 0));
      for (const s of [1, 0.5, 1e-30]) {
        g.arena.kernels.clip(x.offset, g.offset, g.vectors, cv, s);
        const expected = Array.from(g.values, (v) =>
          word(Math.fround(Math.min(Math.max(v, -Math.fround(cv)), Math.fround(cv)) * s)),
        );
        expect(Array.from(x.values, word)).toEqual(expected);
      }
      memory.free([g, x]);
    },
  );

  it('sumSquares clips like the reference, and a NaN or infinity shows in the sum', () => {
    const finite = float32(specials);
    for (const cv of [0.25, 1e30, Number.POSITIVE_INFINITY]) {
      expect(finite.arena.kernels.sumSquares(finite.offset, finite.vectors, cv)).toBe(
        referenceSumSquares(Float32Array.from(specials), specials.length, Math.fround(cv)),
      );
    }
    const nan = float32([1, Number.NaN, 2]);
    expect(nan.arena.kernels.sumSquares(nan.offset, nan.vectors, 0.5)).toBeNaN();
    memory.free([finite, nan]);
  });

  it('nonFinite finds a NaN or an infinity in any lane of an iteration', () => {
    const block = float32(new Array(64).fill(1));
    const { nonFinite } = block.arena.kernels;
    expect(nonFinite(block.offset, block.vectors)).toBe(0);
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      for (let i = 0; i < 64; i++) {
        block.values[i] = bad;
        expect(nonFinite(block.offset, block.vectors)).toBe(1);
        block.values[i] = -3.4028235e38;
      }
    }
    expect(nonFinite(block.offset, block.vectors)).toBe(0);
    memory.free([block]);
  });
});

describe('the WebAssembly binary', () => {
  it('matches kernels.wat (run `npx nx run optimizer:build-wasm` after a change)', () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'build-wasm.js');
    expect(() =>
      execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });
});
