import { fmix32 } from '@pserver/proto';

/** A row's starting value (proto `RowInitializer` without its seed); `zeros` is the unset one. */
export type RowInit =
  | { kind: 'zeros' }
  | { kind: 'constant'; value: number }
  | { kind: 'uniform'; low: number; high: number }
  | { kind: 'normal'; mean: number; stddev: number };

const golden = 0x9e3779b9;
const twoToMinus24 = 2 ** -24;

/**
 * The counter-based draw of table.proto's `RowInitializer`: element `e` of the row of id
 * (lo, hi), counter `k`, as a number in [0, 1) with 24 significant bits:
 * `u = fmix32(fmix32(fmix32(fmix32(seed_lo ^ k) ^ seed_hi) ^ lo) ^ hi ^ imul(e, 0x9e3779b9))`,
 * mapped to `(u >>> 8) · 2^-24`. No state: the same id always draws the same values, in every
 * process and language.
 */
export function initDraw(
  seedLo: number,
  seedHi: number,
  k: number,
  lo: number,
  hi: number,
  e: number,
): number {
  const keyed = fmix32(fmix32((seedLo ^ k) >>> 0) ^ seedHi);
  const u = fmix32((fmix32((keyed ^ lo) >>> 0) ^ hi ^ Math.imul(e, golden)) >>> 0);
  return (u >>> 8) * twoToMinus24;
}

/**
 * Writes the starting value of the row of id (lo, hi) under seed (seedLo, seedHi) into `out[offset .. offset + dim)`:
 * uniform `low + (high − low) · U`, normal `mean + stddev · (U0 + … + U11 − 6)` (the sum taken in
 * order, in binary64), each rounded once to float32 by the store.
 */
export function writeInitRow(
  init: RowInit,
  seedLo: number,
  seedHi: number,
  lo: number,
  hi: number,
  out: Float32Array,
  offset: number,
  dim: number,
): void {
  lo >>>= 0;
  hi >>>= 0;
  switch (init.kind) {
    case 'zeros':
      out.fill(0, offset, offset + dim);
      return;
    case 'constant':
      out.fill(init.value, offset, offset + dim);
      return;
    case 'uniform': {
      const { low, high } = init;
      for (let e = 0; e < dim; e++) {
        out[offset + e] = low + (high - low) * initDraw(seedLo, seedHi, 0, lo, hi, e);
      }
      return;
    }
    case 'normal': {
      const { mean, stddev } = init;
      for (let e = 0; e < dim; e++) {
        let sum = 0;
        for (let k = 0; k < 12; k++) sum += initDraw(seedLo, seedHi, k, lo, hi, e);
        out[offset + e] = mean + stddev * (sum - 6);
      }
      return;
    }
  }
}
