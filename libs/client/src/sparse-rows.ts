import { bucketsOfIds, fmix32, type SparseGrad } from '@pserver/proto';
import { ClientError } from './errors';
import type { TableDirectory, TableLayout } from './tables';

/**
 * A batch of ids with duplicates removed: `words` holds the distinct ids as (lo, hi) 32-bit
 * halves of their two's complement, in order of first appearance (the bytes of int64
 * little-endian values, ready to send); `inverse[i]` is the distinct index of the batch's id i.
 */
export interface DistinctIds {
  readonly words: Uint32Array;
  readonly count: number;
  readonly inverse: Int32Array;
}

/** The ids' 32-bit halves, without BigInt: a view on little-endian hosts (the wire's order). */
export function idWords(ids: BigInt64Array): Uint32Array {
  return new Uint32Array(ids.buffer, ids.byteOffset, ids.length * 2);
}

/**
 * Removes duplicate ids, keeping the first appearance's order. Open addressing over the two
 * halves (no Map of BigInt, which is several times slower and allocates per id).
 */
export function distinctIds(words: Uint32Array): DistinctIds {
  const n = words.length / 2;
  let capacity = 8;
  while (capacity < n * 2) capacity *= 2;
  const mask = capacity - 1;
  const slots = new Int32Array(capacity).fill(-1);
  const out = new Uint32Array(words.length);
  const inverse = new Int32Array(n);
  let count = 0;
  for (let i = 0; i < n; i++) {
    const lo = words[2 * i]!;
    const hi = words[2 * i + 1]!;
    let h = fmix32((lo ^ fmix32(hi)) >>> 0) & mask;
    for (;;) {
      const slot = slots[h]!;
      if (slot === -1) {
        slots[h] = count;
        out[2 * count] = lo;
        out[2 * count + 1] = hi;
        inverse[i] = count++;
        break;
      }
      if (out[2 * slot] === lo && out[2 * slot + 1] === hi) {
        inverse[i] = slot;
        break;
      }
      h = (h + 1) & mask;
    }
  }
  return { words: out.slice(0, 2 * count), count, inverse };
}

/** The distinct indices of each shard's ids (ascending: first-appearance order), by shard. */
export function groupByShard(
  words: Uint32Array,
  layout: TableLayout,
  bucketShards: Uint32Array,
): Map<number, Int32Array> {
  const buckets = bucketsOfIds(
    new Uint8Array(words.buffer, words.byteOffset, words.byteLength),
    layout.buckets,
  );
  const sizes = new Map<number, number>();
  for (const bucket of buckets) {
    const shard = bucketShards[bucket]!;
    sizes.set(shard, (sizes.get(shard) ?? 0) + 1);
  }
  const groups = new Map<number, Int32Array>();
  const filled = new Map<number, number>();
  for (const [shard, size] of sizes) {
    groups.set(shard, new Int32Array(size));
    filled.set(shard, 0);
  }
  for (let k = 0; k < buckets.length; k++) {
    const shard = bucketShards[buckets[k]!]!;
    const at = filled.get(shard)!;
    groups.get(shard)![at] = k;
    filled.set(shard, at + 1);
  }
  return groups;
}

/** The ids (as their halves) at `indices` of `words`. */
export function pickIds(words: Uint32Array, indices: Int32Array): Uint32Array {
  const out = new Uint32Array(indices.length * 2);
  for (let j = 0; j < indices.length; j++) {
    out[2 * j] = words[2 * indices[j]!]!;
    out[2 * j + 1] = words[2 * indices[j]! + 1]!;
  }
  return out;
}

/** Row gradients as `pushRows` was given them, checked. */
export interface StagedRows {
  readonly ids: BigInt64Array;
  readonly grads: Float32Array;
  readonly counts?: Uint32Array;
}

/**
 * Checks a `pushRows` call against the table: `grads` holds ids × dim values, `counts` (if
 * given) one per id. CLIENT_SHAPE_MISMATCH names the table, the expected and the actual.
 */
export function checkRows(layout: TableLayout, rows: StagedRows): void {
  const { ids, grads, counts } = rows;
  const mismatch = (what: string): ClientError =>
    new ClientError('CLIENT_SHAPE_MISMATCH', `rows of table ${layout.name}: ${what}`);
  if (!(ids instanceof BigInt64Array)) throw mismatch('ids must be a BigInt64Array');
  if (!(grads instanceof Float32Array)) throw mismatch('grads must be a Float32Array');
  if (grads.length !== ids.length * layout.dim)
    throw mismatch(
      `expected ${ids.length} ids × dim ${layout.dim} = ${ids.length * layout.dim} values, ` +
        `got ${grads.length}`,
    );
  if (counts !== undefined && !(counts instanceof Uint32Array))
    throw mismatch('counts must be a Uint32Array');
  if (counts !== undefined && counts.length !== ids.length)
    throw mismatch(`expected ${ids.length} counts (one per id), got ${counts.length}`);
}

/** A table's row gradients with one row per distinct id. */
export interface MergedRows {
  readonly ids: DistinctIds;
  /** count × dim values: the sum of each id's rows. */
  readonly grads: Float32Array;
  /** Occurrences per distinct id, when any call gave counts (1 for calls that did not). */
  readonly counts: Uint32Array | undefined;
}

/**
 * Merges the step's row gradients of one table: duplicate ids (within a call and across calls)
 * summed in order of first appearance, in float32 arithmetic (each addition rounded to float32,
 * as the pserver would), and their counts summed.
 */
export function mergeRows(dim: number, staged: readonly StagedRows[]): MergedRows {
  const total = staged.reduce((n, s) => n + s.ids.length, 0);
  const words = new Uint32Array(total * 2);
  let at = 0;
  for (const s of staged) {
    words.set(idWords(s.ids), at * 2);
    at += s.ids.length;
  }
  const ids = distinctIds(words);
  const grads = new Float32Array(ids.count * dim);
  const seen = new Uint8Array(ids.count);
  const withCounts = staged.some((s) => s.counts !== undefined);
  const counts = withCounts ? new Uint32Array(ids.count) : undefined;
  let i = 0;
  for (const s of staged) {
    for (let r = 0; r < s.ids.length; r++, i++) {
      const k = ids.inverse[i]!;
      const from = r * dim;
      const to = k * dim;
      if (seen[k] === 0) {
        grads.set(s.grads.subarray(from, from + dim), to);
        seen[k] = 1;
      } else {
        // A float32 sum computed in binary64 and rounded once is the float32 sum (53 ≥ 2·24 + 2).
        for (let e = 0; e < dim; e++) grads[to + e] = grads[to + e]! + s.grads[from + e]!;
      }
      if (counts) counts[k] = Math.min(0xffffffff, counts[k]! + (s.counts ? s.counts[r]! : 1));
    }
  }
  return { ids, grads, counts };
}

/** Each shard's part of merged rows, as SparseGrads of the push, by shard. */
export function sparseGradsByShard(
  table: string,
  merged: MergedRows,
  dim: number,
  groups: ReadonlyMap<number, Int32Array>,
): Map<number, SparseGrad> {
  const out = new Map<number, SparseGrad>();
  for (const [shard, indices] of groups) {
    const ids = pickIds(merged.ids.words, indices);
    const grads = new Float32Array(indices.length * dim);
    const counts = merged.counts ? new Uint32Array(indices.length) : undefined;
    for (let j = 0; j < indices.length; j++) {
      const k = indices[j]!;
      grads.set(merged.grads.subarray(k * dim, (k + 1) * dim), j * dim);
      if (counts) counts[j] = merged.counts![k]!;
    }
    out.set(shard, {
      table,
      ids: bytesOf(ids),
      grads: bytesOf(grads),
      ...(counts ? { counts: bytesOf(counts) } : {}),
    });
  }
  return out;
}

export function bytesOf(array: Uint32Array | Float32Array): Buffer {
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

/**
 * The rows of a lookup in request order: `rows` holds one row per distinct id; the batch's row i
 * is that of its distinct id (no copy when the batch had no duplicates).
 */
export function scatterRows(distinct: DistinctIds, rows: Float32Array, dim: number): Float32Array {
  const n = distinct.inverse.length;
  if (distinct.count === n) return rows; // distinct ids keep their first-appearance order
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const k = distinct.inverse[i]!;
    out.set(rows.subarray(k * dim, (k + 1) * dim), i * dim);
  }
  return out;
}

/** A step's row gradients by table, until its push takes them. */
export class RowStage {
  private readonly byTable = new Map<string, StagedRows[]>();

  get empty(): boolean {
    return this.byTable.size === 0;
  }

  add(table: string, rows: StagedRows): void {
    const list = this.byTable.get(table) ?? [];
    list.push(rows);
    this.byTable.set(table, list);
  }

  /** The staged rows merged per table and split by shard (each shard's SparseGrads); clears. */
  take(tables: TableDirectory, shardCount: number): Map<number, SparseGrad[]> {
    const byShard = new Map<number, SparseGrad[]>();
    for (const [table, staged] of this.byTable) {
      const layout = tables.get(table)!;
      const merged = mergeRows(layout.dim, staged);
      const groups = groupByShard(merged.ids.words, layout, tables.shardsOf(layout, shardCount));
      for (const [shard, grad] of sparseGradsByShard(table, merged, layout.dim, groups)) {
        const list = byShard.get(shard) ?? [];
        list.push(grad);
        byShard.set(shard, list);
      }
    }
    this.byTable.clear();
    return byShard;
  }
}
