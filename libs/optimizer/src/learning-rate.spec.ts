import { resolveOptimizerConfig } from './config';
import { learningRateAt } from './learning-rate';

const policy = (learningRate: object) => resolveOptimizerConfig({ learningRate }).learningRate;

describe('learningRateAt', () => {
  it('keeps a constant rate', () => {
    expect([1, 10, 1e6].map((t) => learningRateAt(policy({ base: 0.3 }), t))).toEqual([
      0.3, 0.3, 0.3,
    ]);
  });

  it("follows PaddlePaddle's linear decay max(lr − a·t, b), down to its floor", () => {
    const linear = policy({ base: 1, linear: { decayA: 0.25, decayB: 0.25 } });
    expect([1, 2, 3, 4, 100].map((t) => learningRateAt(linear, t))).toEqual([
      0.75, 0.5, 0.25, 0.25, 0.25,
    ]);
  });

  it('decays by gamma every stepSize updates', () => {
    const step = policy({ base: 1, step: { stepSize: 2, gamma: 0.5 } });
    expect([1, 2, 3, 4, 5].map((t) => learningRateAt(step, t))).toEqual([1, 0.5, 0.5, 0.25, 0.25]);
  });

  it('warms up linearly, then anneals along a cosine to its floor and stays there', () => {
    const cosine = policy({ base: 1, cosine: { warmupSteps: 4, totalSteps: 12, minRate: 0.1 } });
    expect(learningRateAt(cosine, 1)).toBe(0.25);
    expect(learningRateAt(cosine, 4)).toBe(1);
    // Halfway through the annealing (t = 8): min + (base − min)/2.
    expect(learningRateAt(cosine, 8)).toBeCloseTo(0.55, 15);
    expect(learningRateAt(cosine, 12)).toBeCloseTo(0.1, 15);
    expect(learningRateAt(cosine, 1000)).toBeCloseTo(0.1, 15);
  });

  it('anneals from the first update without warm-up', () => {
    const cosine = policy({ base: 2, cosine: { totalSteps: 2 } });
    expect(learningRateAt(cosine, 1)).toBeCloseTo(1, 15);
    expect(learningRateAt(cosine, 2)).toBeCloseTo(0, 15);
  });
});
