import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { randomVector } from '../../test-support/textbook';
import type { OptimizerConfigInput } from '../config';
import { Optimizer } from '../optimizer';

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

describe('the WebAssembly binary', () => {
  it('matches kernels.wat (run `npx nx run optimizer:build-wasm` after a change)', () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'build-wasm.js');
    expect(() =>
      execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });
});
