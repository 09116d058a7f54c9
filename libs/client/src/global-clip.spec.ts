import fs from 'node:fs';
import path from 'node:path';
import { checkMaxNorm, clipByGlobalNorm, globalNorm } from './global-clip';
import { Float16Bits } from './tensors';
import type { TensorArray } from './tensors';

interface Vector {
  title: string;
  maxNorm: number;
  norm: number;
  clipped: boolean;
  grads: { name: string; elementType: string; contentHex: string; clippedHex: string }[];
}

// The vectors every client checks itself against (proto/README.md, "Global-norm clipping").
const vectors: Vector[] = JSON.parse(
  fs.readFileSync(
    path.join(__dirname, '..', '..', '..', 'proto', 'testdata', 'clipping.json'),
    'utf8',
  ),
).vectors;

const arrays: Record<string, (bytes: ArrayBuffer) => TensorArray> = {
  ELEMENT_TYPE_FLOAT32: (b) => new Float32Array(b),
  ELEMENT_TYPE_FLOAT64: (b) => new Float64Array(b),
  ELEMENT_TYPE_INT32: (b) => new Int32Array(b),
  ELEMENT_TYPE_FLOAT16: (b) => new Float16Bits(b),
};

const hexOf = (values: TensorArray): string =>
  Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('hex');

/** The vector's gradients, in the order it gives them. */
function gradsOf(vector: Vector): Record<string, TensorArray> {
  return Object.fromEntries(
    vector.grads.map((g) => [
      g.name,
      arrays[g.elementType]!(new Uint8Array(Buffer.from(g.contentHex, 'hex')).buffer),
    ]),
  );
}

describe('global-norm clipping', () => {
  it.each(vectors.map((v) => [v.title, v] as const))(
    '%s: the norm and every byte as clipping.json says',
    (_title, vector) => {
      const grads = gradsOf(vector);
      expect(globalNorm(grads)).toBe(vector.norm);
      const clipped = clipByGlobalNorm(grads, vector.maxNorm);
      expect(
        Object.fromEntries(vector.grads.map((g) => [g.name, hexOf(clipped[g.name]!)])),
      ).toEqual(Object.fromEntries(vector.grads.map((g) => [g.name, g.clippedHex])));
    },
  );

  it('leaves the given arrays as they were', () => {
    const vector = vectors.find((v) => v.clipped)!;
    const grads = gradsOf(vector);
    clipByGlobalNorm(grads, vector.maxNorm);
    expect(Object.values(grads).map(hexOf)).toEqual(vector.grads.map((g) => g.contentHex));
  });

  it('takes a finite bound above 0 and refuses any other, naming the option and the value', () => {
    expect(checkMaxNorm('globalClipNorm', 0.5)).toBe(0.5);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '1'])
      expect(() => checkMaxNorm('globalClipNorm', bad)).toThrow(
        expect.objectContaining({
          code: 'CLIENT_INVALID_OPTIONS',
          message: `globalClipNorm: must be a finite number > 0, got ${String(bad)}`,
        }),
      );
  });
});
