/**
 * The update rules as plain TypeScript loops: the reference the WebAssembly kernels are tested
 * against, the float64 path, and the float32 fallback where WebAssembly SIMD is missing.
 *
 * `r` rounds each operation's result to the array's precision: `Math.fround` for float32 (a
 * float64 operation on float32 inputs, rounded once, is the correctly rounded float32 operation,
 * so these loops give the same bits as kernels.wat), the identity for float64. Every loop
 * performs the operations of its kernels.wat counterpart, in the same order.
 */

export type Vector = Float32Array | Float64Array;
export type Round = (x: number) => number;

export const roundFloat32: Round = Math.fround;
export const roundFloat64: Round = (x) => x;

/** How the raw gradient g becomes x: clamp to [-clipValue, clipValue], then scale. */
export interface Clip {
  clipValue: number;
  scale: number;
}

function clipped(g: number, clip: Clip, r: Round): number {
  return r(Math.min(Math.max(g, -clip.clipValue), clip.clipValue) * clip.scale);
}

/** Whether any of the first n elements is NaN or ±Infinity. */
export function hasNonFinite(g: Vector, n: number): boolean {
  for (let i = 0; i < n; i++) if (!Number.isFinite(g[i]!)) return true;
  return false;
}

/**
 * The sum of squares of the clamped gradient, in float64: four partial sums (element i goes to
 * sum i mod 4), added as (s0 + s1) + (s2 + s3), as the kernel's four lanes do.
 */
export function sumSquares(g: Vector, n: number, clipValue: number): number {
  const s = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) {
    const x = Math.min(Math.max(g[i]!, -clipValue), clipValue);
    s[i & 3]! += x * x;
  }
  return s[0]! + s[1]! + (s[2]! + s[3]!);
}

export interface SgdScalars {
  lr: number;
  weightDecay: number;
}

export function sgd(p: Vector, g: Vector, n: number, k: SgdScalars, clip: Clip, r: Round): void {
  const lr = r(k.lr);
  const wd = r(k.weightDecay);
  const c = { clipValue: r(clip.clipValue), scale: r(clip.scale) };
  for (let i = 0; i < n; i++) {
    const w = p[i]!;
    const d = r(clipped(g[i]!, c, r) + r(wd * w));
    p[i] = r(w - r(lr * d));
  }
}

export interface SgdMomentumScalars extends SgdScalars {
  momentum: number;
  nesterov: boolean;
}

export function sgdMomentum(
  p: Vector,
  g: Vector,
  v: Vector,
  n: number,
  k: SgdMomentumScalars,
  clip: Clip,
  r: Round,
): void {
  const lr = r(k.lr);
  const mu = r(k.momentum);
  const wd = r(k.weightDecay);
  const c = { clipValue: r(clip.clipValue), scale: r(clip.scale) };
  for (let i = 0; i < n; i++) {
    const w = p[i]!;
    const d = r(clipped(g[i]!, c, r) + r(wd * w));
    const lrd = r(lr * d);
    let velocity = r(r(mu * v[i]!) - lrd);
    v[i] = velocity;
    if (k.nesterov) velocity = r(r(mu * velocity) - lrd);
    p[i] = r(w + velocity);
  }
}

export interface AdamScalars {
  /** lr · sqrt(1 − β2ᵗ) / (1 − β1ᵗ): the bias corrections folded into the step size. */
  lrT: number;
  beta1: number;
  beta2: number;
  /** ε · sqrt(1 − β2ᵗ). */
  epsHat: number;
  weightDecay: number;
  /** 1 − lr·λ for AdamW's decoupled decay; 1 for Adam. */
  decay: number;
}

export function adam(
  p: Vector,
  g: Vector,
  m: Vector,
  v: Vector,
  n: number,
  k: AdamScalars,
  clip: Clip,
  r: Round,
): void {
  const lrT = r(k.lrT);
  const b1 = r(k.beta1);
  const omb1 = r(1 - k.beta1);
  const b2 = r(k.beta2);
  const omb2 = r(1 - k.beta2);
  const eps = r(k.epsHat);
  const wd = r(k.weightDecay);
  const decay = r(k.decay);
  const c = { clipValue: r(clip.clipValue), scale: r(clip.scale) };
  for (let i = 0; i < n; i++) {
    const w = p[i]!;
    const d = r(clipped(g[i]!, c, r) + r(wd * w));
    const mm = r(r(b1 * m[i]!) + r(omb1 * d));
    const vv = r(r(b2 * v[i]!) + r(omb2 * r(d * d)));
    m[i] = mm;
    v[i] = vv;
    p[i] = r(r(w * decay) - r(lrT * r(mm / r(r(Math.sqrt(vv)) + eps))));
  }
}

export interface AdagradScalars {
  lr: number;
  epsilon: number;
  weightDecay: number;
}

export function adagrad(
  p: Vector,
  g: Vector,
  a: Vector,
  n: number,
  k: AdagradScalars,
  clip: Clip,
  r: Round,
): void {
  const lr = r(k.lr);
  const eps = r(k.epsilon);
  const wd = r(k.weightDecay);
  const c = { clipValue: r(clip.clipValue), scale: r(clip.scale) };
  for (let i = 0; i < n; i++) {
    const w = p[i]!;
    const d = r(clipped(g[i]!, c, r) + r(wd * w));
    const acc = r(a[i]! + r(d * d));
    a[i] = acc;
    p[i] = r(w - r(lr * r(d / r(r(Math.sqrt(acc)) + eps))));
  }
}

export interface AdadeltaScalars {
  lr: number;
  rho: number;
  epsilon: number;
  weightDecay: number;
}

export function adadelta(
  p: Vector,
  g: Vector,
  a: Vector,
  da: Vector,
  n: number,
  k: AdadeltaScalars,
  clip: Clip,
  r: Round,
): void {
  const lr = r(k.lr);
  const rho = r(k.rho);
  const omr = r(1 - k.rho);
  const eps = r(k.epsilon);
  const wd = r(k.weightDecay);
  const c = { clipValue: r(clip.clipValue), scale: r(clip.scale) };
  for (let i = 0; i < n; i++) {
    const w = p[i]!;
    const x = clipped(g[i]!, c, r);
    const acc = r(r(rho * a[i]!) + r(omr * r(x * x)));
    a[i] = acc;
    const u = r(r(r(Math.sqrt(r(da[i]! + eps))) / r(Math.sqrt(r(acc + eps)))) * x);
    da[i] = r(r(rho * da[i]!) + r(omr * r(u * u)));
    p[i] = r(w - r(lr * r(u + r(wd * w))));
  }
}

export interface RmsPropScalars {
  lr: number;
  alpha: number;
  epsilon: number;
  momentum: number;
  weightDecay: number;
}

/** `centerSlot` is given for the centered variant, `momentumSlot` when momentum > 0. */
export function rmsprop(
  p: Vector,
  g: Vector,
  sq: Vector,
  centerSlot: Vector | undefined,
  momentumSlot: Vector | undefined,
  n: number,
  k: RmsPropScalars,
  clip: Clip,
  r: Round,
): void {
  const lr = r(k.lr);
  const alpha = r(k.alpha);
  const oma = r(1 - k.alpha);
  const eps = r(k.epsilon);
  const mu = r(k.momentum);
  const wd = r(k.weightDecay);
  const c = { clipValue: r(clip.clipValue), scale: r(clip.scale) };
  for (let i = 0; i < n; i++) {
    const w = p[i]!;
    const d = r(clipped(g[i]!, c, r) + r(wd * w));
    const ss = r(r(alpha * sq[i]!) + r(oma * r(d * d)));
    sq[i] = ss;
    let den: number;
    if (centerSlot) {
      const cc = r(r(alpha * centerSlot[i]!) + r(oma * d));
      centerSlot[i] = cc;
      // Rounding can take sq − c² slightly below 0 where it is 0 in exact arithmetic.
      den = r(r(Math.sqrt(Math.max(r(ss - r(cc * cc)), 0))) + eps);
    } else {
      den = r(r(Math.sqrt(ss)) + eps);
    }
    let step = r(d / den);
    if (momentumSlot) {
      step = r(r(mu * momentumSlot[i]!) + step);
      momentumSlot[i] = step;
    }
    p[i] = r(w - r(lr * step));
  }
}
