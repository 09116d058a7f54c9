import {
  accuracy,
  classes,
  gradients,
  initialParams,
  inputs,
  type MlpParams,
  type Sample,
} from './mlp';
import { seededRandom } from './random';

const randomSamples = (n: number, seed: number): Sample[] => {
  const uniform = seededRandom(seed);
  return Array.from({ length: n }, () => ({
    // Sparse like a digit: most pixels blank.
    pixels: Float32Array.from({ length: inputs }, () => (uniform() < 0.2 ? uniform() : 0)),
    label: Math.floor(uniform() * classes),
  }));
};

describe('the MLP', () => {
  it('computes the gradients a finite difference measures', () => {
    const params = initialParams(8, 1);
    const batch = randomSamples(4, 2);
    const { grads } = gradients(params, batch);
    const lossAt = (p: MlpParams): number => gradients(p, batch).loss;
    const uniform = seededRandom(3);
    for (const name of ['w1', 'b1', 'w2', 'b2'] as const) {
      for (let probe = 0; probe < 10; probe++) {
        // A w1 entry of a blank pixel has no gradient; probe where there is signal.
        const index = Math.floor(uniform() * params[name].length);
        const epsilon = 1e-2;
        const shifted = (delta: number): MlpParams => {
          const copy = { ...params, [name]: Float32Array.from(params[name]) };
          copy[name][index]! += delta;
          return copy;
        };
        const numeric = (lossAt(shifted(epsilon)) - lossAt(shifted(-epsilon))) / (2 * epsilon);
        expect(grads[name][index]).toBeCloseTo(numeric, 3);
      }
    }
  });

  it('learns a separable problem by plain gradient descent', () => {
    // The label is the quarter of the image that holds the brightest pixels.
    const uniform = seededRandom(4);
    const samples: Sample[] = Array.from({ length: 200 }, () => {
      const label = Math.floor(uniform() * 4);
      const pixels = new Float32Array(inputs);
      for (let k = 0; k < 30; k++) pixels[label * 196 + Math.floor(uniform() * 196)] = 1;
      return { pixels, label };
    });
    const params = initialParams(16, 5);
    const before = gradients(params, samples).loss;
    for (let step = 0; step < 100; step++) {
      const { grads } = gradients(params, samples);
      for (const name of ['w1', 'b1', 'w2', 'b2'] as const)
        params[name].forEach((_, i) => (params[name][i]! -= 0.5 * grads[name][i]!));
    }
    expect(gradients(params, samples).loss).toBeLessThan(before / 4);
    expect(accuracy(params, samples)).toBe(1);
  });
});
