import { ClientError } from './errors';
import type { TensorArray } from './tensors';

/**
 * Global-norm clipping of a step's dense gradients: the rule of proto/README.md ("Global-norm
 * clipping"), which the Python and Go clients follow bit for bit and
 * proto/testdata/clipping.json pins. Only Float32Array and Float64Array gradients count and are
 * scaled. The squares are added one at a time in a double, tensors in the order of their names'
 * code points and elements in index order, so the sum's rounding depends on nothing a client may
 * do differently (the order a trainer gave, or a pairwise sum).
 */
export function globalNorm(grads: Readonly<Record<string, TensorArray>>): number {
  let squares = 0;
  for (const name of byCodePoint(Object.keys(grads))) {
    const values = grads[name]!;
    if (values instanceof Float32Array || values instanceof Float64Array)
      for (const x of values) squares += x * x;
  }
  return Math.sqrt(squares);
}

/**
 * The gradients scaled by `maxNorm / norm` when their global norm is above `maxNorm` (a NaN norm
 * is not), each product a double rounded to its array's type; else the gradients as given.
 */
export function clipByGlobalNorm(
  grads: Readonly<Record<string, TensorArray>>,
  maxNorm: number,
): Record<string, TensorArray> {
  const norm = globalNorm(grads);
  if (!(norm > maxNorm)) return { ...grads };
  const scale = maxNorm / norm;
  return Object.fromEntries(
    Object.entries(grads).map(([name, values]) => [
      name,
      values instanceof Float32Array || values instanceof Float64Array
        ? values.map((x) => x * scale)
        : values,
    ]),
  );
}

/** The bound as given, if it is a finite number > 0; else CLIENT_INVALID_OPTIONS. */
export function checkMaxNorm(option: string, value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  throw new ClientError(
    'CLIENT_INVALID_OPTIONS',
    `${option}: must be a finite number > 0, got ${String(value)}`,
  );
}

/** Names in the order of their code points (UTF-8 bytes), not of UTF-16 code units as `sort()`. */
function byCodePoint(names: string[]): string[] {
  return names
    .map((name) => ({ name, utf8: Buffer.from(name, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.utf8, b.utf8))
    .map(({ name }) => name);
}
