// Test support: the update rules as textbook float64 math, written independently of the library's
// kernels (no shared code, no shared operation order), to check the library's numbers against.
import type { OptimizerConfigInput } from '../src/config';

/** A seeded generator of numbers in [-1, 1) (mulberry32), so failures reproduce. */
export function randomVector(seed: number, length: number, scale = 1): number[] {
  let a = seed >>> 0;
  const out: number[] = [];
  for (let i = 0; i < length; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out.push(((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1) * scale);
  }
  return out;
}

/** PyTorch's default learning rates; plain SGD has none. */
function defaultRate(config: OptimizerConfigInput): number {
  if (config.adam || config.adamw) return 1e-3;
  if (config.adagrad || config.rmsprop) return 1e-2;
  if (config.adadelta) return 1;
  throw new Error('plain SGD needs learningRate.base');
}

function rate(config: OptimizerConfigInput, t: number): number {
  const lr = config.learningRate ?? {};
  const base = lr.base ?? defaultRate(config);
  if (lr.linear) return Math.max(base - (lr.linear.decayA ?? 0) * t, lr.linear.decayB ?? 0);
  if (lr.step)
    return base * Math.pow(lr.step.gamma ?? 0.1, Math.floor(t / (lr.step.stepSize ?? 1)));
  if (lr.cosine) {
    const w = lr.cosine.warmupSteps ?? 0;
    const total = lr.cosine.totalSteps ?? 0;
    const min = lr.cosine.minRate ?? 0;
    if (t <= w) return (base * t) / w;
    const s = Math.min(1, (t - w) / (total - w));
    return min + 0.5 * (base - min) * (1 + Math.cos(Math.PI * s));
  }
  return base;
}

/** Runs `gradients` through the rule of `config` from `initial`, in float64; returns the parameters. */
export function textbook(
  config: OptimizerConfigInput,
  initial: number[],
  gradients: number[][],
): number[] {
  const p = [...initial];
  const n = p.length;
  const zeros = (): number[] => new Array<number>(n).fill(0);
  const [s1, s2, s3] = [zeros(), zeros(), zeros()];
  if (config.adagrad?.initialAccumulator) s1.fill(config.adagrad.initialAccumulator);
  gradients.forEach((raw, index) => {
    const t = index + 1;
    const lr = rate(config, t);
    const cv = config.clipValue ?? Infinity;
    let g = raw.map((x) => Math.min(cv, Math.max(-cv, x)));
    if (config.clipNorm !== undefined) {
      const norm = Math.hypot(...g);
      if (norm > config.clipNorm) g = g.map((x) => (x * config.clipNorm!) / norm);
    }
    for (let i = 0; i < n; i++) {
      const gi = g[i]!;
      if (config.adam || config.adamw) {
        const c = (config.adam ?? config.adamw)!;
        const [b1, b2, eps] = [c.beta1 ?? 0.9, c.beta2 ?? 0.999, c.epsilon ?? 1e-8];
        const l2 = config.adam ? (c.weightDecay ?? 0) : 0;
        const decoupled = config.adamw ? (c.weightDecay ?? 0.01) : 0;
        const d = gi + l2 * p[i]!;
        s1[i] = b1 * s1[i]! + (1 - b1) * d;
        s2[i] = b2 * s2[i]! + (1 - b2) * d * d;
        const mHat = s1[i]! / (1 - Math.pow(b1, t));
        const vHat = s2[i]! / (1 - Math.pow(b2, t));
        p[i] = p[i]! - lr * decoupled * p[i]! - (lr * mHat) / (Math.sqrt(vHat) + eps);
      } else if (config.adagrad) {
        const c = config.adagrad;
        const d = gi + (c.weightDecay ?? 0) * p[i]!;
        s1[i] = s1[i]! + d * d;
        p[i] = p[i]! - (lr * d) / (Math.sqrt(s1[i]!) + (c.epsilon ?? 1e-10));
      } else if (config.adadelta) {
        const c = config.adadelta;
        const [rho, eps] = [c.rho ?? 0.9, c.epsilon ?? 1e-5];
        s1[i] = rho * s1[i]! + (1 - rho) * gi * gi;
        const u = (Math.sqrt(s2[i]! + eps) / Math.sqrt(s1[i]! + eps)) * gi;
        s2[i] = rho * s2[i]! + (1 - rho) * u * u;
        p[i] = p[i]! - lr * u - lr * (c.weightDecay ?? 0) * p[i]!;
      } else if (config.rmsprop) {
        const c = config.rmsprop;
        const [alpha, eps, mu] = [c.alpha ?? 0.99, c.epsilon ?? 1e-8, c.momentum ?? 0];
        const d = gi + (c.weightDecay ?? 0) * p[i]!;
        s1[i] = alpha * s1[i]! + (1 - alpha) * d * d;
        let variance = s1[i]!;
        if (c.centered) {
          s2[i] = alpha * s2[i]! + (1 - alpha) * d;
          variance -= s2[i]! * s2[i]!;
        }
        const step = d / (Math.sqrt(variance) + eps);
        if (mu > 0) {
          s3[i] = mu * s3[i]! + step;
          p[i] = p[i]! - lr * s3[i]!;
        } else p[i] = p[i]! - lr * step;
      } else {
        const c = config.sgd ?? {};
        const mu = c.momentum ?? 0;
        const d = gi + (c.weightDecay ?? 0) * p[i]!;
        if (mu === 0) p[i] = p[i]! - lr * d;
        else {
          s1[i] = mu * s1[i]! - lr * d;
          p[i] = p[i]! + (c.nesterov ? mu * s1[i]! - lr * d : s1[i]!);
        }
      }
    }
  });
  return p;
}
