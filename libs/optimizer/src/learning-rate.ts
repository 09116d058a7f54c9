import type { LearningRatePolicy } from './config';

/** The learning rate for the t-th update (t ≥ 1 counts applied updates, this one included). */
export function learningRateAt(policy: LearningRatePolicy, t: number): number {
  switch (policy.kind) {
    case 'constant':
      return policy.base;
    case 'linear':
      // PaddlePaddle's LinearLr.
      return Math.max(policy.base - policy.decayA * t, policy.decayB);
    case 'step':
      return policy.base * policy.gamma ** Math.floor(t / policy.stepSize);
    case 'cosine': {
      const { base, warmupSteps, totalSteps, minRate } = policy;
      if (t <= warmupSteps) return (base * t) / warmupSteps;
      const progress =
        Math.min(t - warmupSteps, totalSteps - warmupSteps) / (totalSteps - warmupSteps);
      return minRate + ((base - minRate) * (1 + Math.cos(Math.PI * progress))) / 2;
    }
  }
}
