/**
 * The row rules as float32 loops over one row of a table: the row's values at `data[o .. o+dim)`,
 * its state right after them, its gradient at `g[go .. go+dim)`.
 *
 * Arithmetic, so that an independent program reproduces every bit (test-support/
 * generate_row_golden.py does, with numpy float32):
 * - The scalars of a step (learning rate, Adam's bias-corrected rate and ε) are computed in float64
 *   and rounded once to float32, as the dense `Optimizer` does.
 * - Every per-element operation is one float32 operation, rounded with `Math.fround` (a float64
 *   operation on float32 inputs, rounded once, is the correctly rounded float32 operation), in the
 *   order written, without fused multiply-add: the convention of the dense kernels, whose
 *   operation order the element-wise rules here repeat, so a sparse update of a row equals the
 *   dense update of the same elements bit for bit.
 */

const f = Math.fround;

export function sgdRow(
  data: Float32Array,
  o: number,
  g: Float32Array,
  go: number,
  dim: number,
  lr: number,
): void {
  for (let i = 0; i < dim; i++) data[o + i] = f(data[o + i]! - f(lr * g[go + i]!));
}

/** Element-wise Adagrad: the accumulator is `dim` floats after the values. */
export function adagradRow(
  data: Float32Array,
  o: number,
  g: Float32Array,
  go: number,
  dim: number,
  lr: number,
  eps: number,
): void {
  const a = o + dim;
  for (let i = 0; i < dim; i++) {
    const x = g[go + i]!;
    const acc = f(data[a + i]! + f(x * x));
    data[a + i] = acc;
    data[o + i] = f(data[o + i]! - f(lr * f(x / f(f(Math.sqrt(acc)) + eps))));
  }
}

/**
 * Row-wise Adagrad: one accumulator after the values. The mean of g² is summed in four float32
 * partial sums (element i into sum i mod 4), added as (s0 + s1) + (s2 + s3), then divided by dim:
 * the order of a four-lane f32x4 kernel, should one replace this loop.
 */
export function rowwiseAdagradRow(
  data: Float32Array,
  o: number,
  g: Float32Array,
  go: number,
  dim: number,
  lr: number,
  eps: number,
): void {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  for (; i + 3 < dim; i += 4) {
    const x0 = g[go + i]!;
    const x1 = g[go + i + 1]!;
    const x2 = g[go + i + 2]!;
    const x3 = g[go + i + 3]!;
    s0 = f(s0 + f(x0 * x0));
    s1 = f(s1 + f(x1 * x1));
    s2 = f(s2 + f(x2 * x2));
    s3 = f(s3 + f(x3 * x3));
  }
  if (i < dim) s0 = f(s0 + f(g[go + i]! * g[go + i]!));
  if (i + 1 < dim) s1 = f(s1 + f(g[go + i + 1]! * g[go + i + 1]!));
  if (i + 2 < dim) s2 = f(s2 + f(g[go + i + 2]! * g[go + i + 2]!));
  const mean = f(f(f(s0 + s1) + f(s2 + s3)) / dim);
  const acc = f(data[o + dim]! + mean);
  data[o + dim] = acc;
  const multiplier = f(lr / f(f(Math.sqrt(acc)) + eps));
  for (let j = 0; j < dim; j++) data[o + j] = f(data[o + j]! - f(multiplier * g[go + j]!));
}

/**
 * Adam's moments and step, m (`dim` floats) then v (`dim` floats) after the values, with the
 * bias corrections folded into `lrT` = lr·√(1 − β2ᵗ)/(1 − β1ᵗ) and `epsHat` = ε·√(1 − β2ᵗ), in the
 * dense Adam kernel's order. `b1`, `omb1`, `b2`, `omb2` are β1, 1 − β1, β2, 1 − β2 in float32.
 */
export function adamRow(
  data: Float32Array,
  o: number,
  g: Float32Array,
  go: number,
  dim: number,
  b1: number,
  omb1: number,
  b2: number,
  omb2: number,
  lrT: number,
  epsHat: number,
): void {
  const m = o + dim;
  const v = m + dim;
  for (let i = 0; i < dim; i++) {
    const x = g[go + i]!;
    const mm = f(f(b1 * data[m + i]!) + f(omb1 * x));
    const vv = f(f(b2 * data[v + i]!) + f(omb2 * f(x * x)));
    data[m + i] = mm;
    data[v + i] = vv;
    data[o + i] = f(data[o + i]! - f(lrT * f(mm / f(f(Math.sqrt(vv)) + epsHat))));
  }
}
