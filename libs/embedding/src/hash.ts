/** murmur3's 32-bit finalizer: every input bit affects every output bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The hash an `IdIndex` probes from, over an id's two 32-bit halves.
 *
 * It is deliberately not the placement hash `fmix32(lo ^ fmix32(hi))` whose low bits choose an
 * id's bucket: all ids on one shard share those bits, so an index keyed by the same hash would put
 * them in a fraction of its slots. The seeds make the two hashes unrelated.
 */
export function indexHash(lo: number, hi: number): number {
  return fmix32((lo ^ fmix32(hi ^ 0x9e3779b9)) + 0x7f4a7c15);
}
