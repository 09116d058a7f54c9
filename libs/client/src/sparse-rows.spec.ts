import { distinctIds, idWords, mergeRows, scatterRows } from './sparse-rows';

/** A random int64 from a small pool (many duplicates), extremes included. */
function randomIds(n: number, seed: number): BigInt64Array {
  const pool = [0n, -1n, 1n, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 32n, -(2n ** 31n)];
  let x = seed;
  const next = (): number => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  return BigInt64Array.from({ length: n }, () =>
    next() % 3 === 0
      ? pool[next() % pool.length]!
      : BigInt.asIntN(64, BigInt(next()) << BigInt(next() % 40)),
  );
}

describe('distinctIds', () => {
  it('keeps each id once, in order of first appearance, and maps every position to it', () => {
    for (const seed of [1, 2, 3]) {
      const ids = randomIds(5000, seed);
      const { words, count, inverse } = distinctIds(idWords(ids));
      const reference = [...new Set(ids)];
      expect(count).toBe(reference.length);
      const distinct = new BigInt64Array(words.buffer);
      expect([...distinct]).toEqual(reference);
      ids.forEach((id, i) => expect(distinct[inverse[i]!]).toBe(id));
    }
  });
});

describe('mergeRows and scatterRows', () => {
  it('sum duplicates as float32 in order and scatter rows back to every position', () => {
    const ids = BigInt64Array.from([9n, -9n, 9n]);
    const merged = mergeRows(1, [{ ids, grads: Float32Array.from([0.1, 2, 0.2]) }]);
    expect([...merged.grads]).toEqual([Math.fround(Math.fround(0.1) + Math.fround(0.2)), 2]);
    expect(merged.counts).toBeUndefined();
    const rows = scatterRows(merged.ids, Float32Array.from([5, 6]), 1);
    expect([...rows]).toEqual([5, 6, 5]);
  });
});
