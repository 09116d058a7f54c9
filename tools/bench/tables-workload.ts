/**
 * The workload of the table benchmark, computed before anything is timed: batches of ids drawn
 * from a Zipf distribution over `idCount` ids with a seeded generator, each deduplicated as a
 * client does before it sends, and the ids spread over the int64 range by a fixed bijection so
 * that popular ids are neither small nor consecutive.
 */
import { fmix32 } from '@pserver/proto';

/**
 * The id of Zipf rank `rank` (< 2^32) as its two uint32 halves: three Feistel-like rounds, each a
 * bijection on (lo, hi), so distinct ranks get distinct ids spread over the whole int64 range.
 */
export function idOfRank(rank: number, out: Uint32Array, at: number): void {
  let lo = fmix32(rank ^ 0x9e3779b9);
  const hi = fmix32(lo ^ 0x7f4a7c15);
  lo = (lo ^ fmix32(hi ^ 0x94d049bb)) >>> 0;
  out[at] = lo;
  out[at + 1] = hi;
}

/** A seeded uniform generator on [0, 1) with 53 random bits (two mulberry32 draws). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  const next32 = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return () => ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992;
}

/** Draws Zipf(s) ranks in [0, n): rank k with probability ∝ 1 / (k + 1)^s, by its CDF. */
export class ZipfSampler {
  private readonly cdf: Float64Array;

  constructor(
    readonly n: number,
    readonly s: number,
    private readonly random: () => number,
  ) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k++) {
      sum += Math.pow(k + 1, -s);
      this.cdf[k] = sum;
    }
    for (let k = 0; k < n; k++) this.cdf[k] = this.cdf[k]! / sum;
  }

  next(): number {
    const u = this.random();
    let lo = 0;
    let hi = this.n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** One batch as sent: its distinct ids (int64 LE, in order of first appearance). */
export interface Batch {
  /** Ids the batch asked for, duplicates included. */
  readonly requested: number;
  /** The distinct ids, 8 bytes each. */
  readonly ids: Buffer;
  /** Each distinct id's 8 bytes as its own view (a Redis key); kept only for the Zipf batches. */
  keys?: Buffer[];
}

/** The batch's Redis keys: views of its ids, made once for batches that keep them. */
export function keysOf(batch: Batch): Buffer[] {
  if (batch.keys) return batch.keys;
  const count = batch.ids.length / 8;
  const keys = new Array<Buffer>(count);
  for (let i = 0; i < count; i++) keys[i] = batch.ids.subarray(i * 8, i * 8 + 8);
  return keys;
}

export interface Workload {
  readonly idCount: number;
  /** Every id once, in batches of `batchSize` (the fill). */
  readonly fill: Batch[];
  /** Zipf batches, cycled through by the timed phases. */
  readonly zipf: Batch[];
}

export interface WorkloadOptions {
  idCount: number;
  batchSize: number;
  /** Distinct Zipf batches to draw (the timed phases cycle through them). */
  zipfBatches: number;
  zipfS: number;
  seed: number;
}

function batchOf(words: Uint32Array, count: number, requested: number): Batch {
  return { requested, ids: Buffer.from(words.buffer, words.byteOffset, count * 8) };
}

export function makeWorkload(options: WorkloadOptions): Workload {
  const { idCount, batchSize } = options;
  const fill: Batch[] = [];
  for (let start = 0; start < idCount; start += batchSize) {
    const count = Math.min(batchSize, idCount - start);
    const words = new Uint32Array(count * 2);
    for (let i = 0; i < count; i++) idOfRank(start + i, words, i * 2);
    fill.push(batchOf(words, count, count));
  }
  const sampler = new ZipfSampler(idCount, options.zipfS, seededRandom(options.seed));
  // seen[rank] = number of the batch that last drew it, plus one: dedup without a Set.
  const seen = new Int32Array(idCount);
  const zipf: Batch[] = [];
  for (let b = 0; b < options.zipfBatches; b++) {
    const words = new Uint32Array(batchSize * 2);
    let count = 0;
    for (let i = 0; i < batchSize; i++) {
      const rank = sampler.next();
      if (seen[rank] === b + 1) continue;
      seen[rank] = b + 1;
      idOfRank(rank, words, count * 2);
      count++;
    }
    const batch = batchOf(words, count, batchSize);
    // Made here, so that the timed phases do not make them; the fill's are made as it goes
    // (10 M small views at once would weigh on the driver's heap).
    batch.keys = keysOf(batch);
    zipf.push(batch);
  }
  return { idCount, fill, zipf };
}
