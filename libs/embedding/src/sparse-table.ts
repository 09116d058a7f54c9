import { setImmediate as nextTurn } from 'node:timers/promises';
import { RowOptimizer, type RowOptimizerConfigInput } from '@pserver/optimizer';
import { bucketsOfIds, fmix32, tableShards } from '@pserver/proto';
import { EmbeddingError, invalidArgument } from './errors';
import { IdIndex } from './id-index';
import { RowArena, rowFlags, type RowChunk } from './row-arena';
import { writeInitRow, type RowInit } from './row-init';

/** Which new ids get a row. */
export type AdmissionRule =
  | { kind: 'all' }
  | { kind: 'counting'; minCount: number }
  | { kind: 'probabilistic'; probability: number };

/** Options of a `SparseTable`: one table's buckets on one shard. */
export interface SparseTableOptions {
  name: string;
  dim: number;
  /** Buckets of the whole table, a power of two. */
  buckets: number;
  shardIndex: number;
  shardCount: number;
  init: RowInit;
  /** The initializer's 64-bit seed as two uint32 halves; also keys probabilistic admission. */
  seedLo: number;
  seedHi: number;
  optimizer: RowOptimizerConfigInput;
  admission?: AdmissionRule;
  /** Evict rows not pushed for more than this many table steps. */
  ttlSteps?: number;
  /** Most rows on this shard; creating one more evicts the least recently pushed of a sample. */
  maxRows?: number;
  /** Rows to size the index and arena for up front (this shard's share). */
  expectedRows?: number;
  /** What a pull of an id without a row reads. Default 'init'. */
  pullMissing?: 'init' | 'zero';
  /** Most bytes of the arena (values, state, metadata). Default unlimited. */
  maxBytes?: number;
  /** Arena rows per chunk. Default 4096. */
  rowsPerChunk?: number;
  /** Rows a TTL sweep looks at after each push (a larger table is swept over several pushes). */
  sweepRowsPerPush?: number;
}

/** One table's gradients in a push, as they travel: int64 LE ids, float32 LE rows, uint32 counts. */
export interface SparseGradBytes {
  ids: Uint8Array;
  grads: Uint8Array;
  counts?: Uint8Array;
}

/** What a push did to the table. */
export interface SparseOutcomeCounts {
  rowsUpdated: number;
  rowsCreated: number;
  rowsRejected: number;
  rowsEvicted: number;
  /**
   * The ids the push evicted, in order, as (low, high) 32-bit pairs: what a replica applying the
   * same push replays (`apply`'s `replayEvictions`) instead of choosing its own.
   */
  evictedIds: Uint32Array;
}

/** The table's rows as a checkpoint takes them: parallel arrays, row k of each. */
export interface TableRowsSection {
  /** int64 little-endian, 8 bytes a row. */
  ids: Uint8Array;
  /** `stride` float32 values a row: the values, then the optimizer state. */
  values: Float32Array;
  lastSeen: Uint32Array;
  count: Uint32Array;
  /** A snapshot's section: the buckets of its first and last rows (rows are in bucket order). */
  firstBucket?: number;
  lastBucket?: number;
}

/** Ids waiting for admission by count, with their counts so far. */
export interface PendingAdmissions {
  ids: Uint8Array;
  counts: Uint32Array;
}

/** A checked push, ready to apply: valid only until the table next changes. */
export interface PreparedSparsePush {
  readonly table: SparseTable;
  readonly version: number;
  readonly lo: Uint32Array;
  readonly hi: Uint32Array;
  readonly occurrences: Uint32Array;
  /** Merged gradient rows, unique × dim. */
  readonly grads: Float32Array;
  /** The row of each unique id; −1 for an id without a (live, unexpired) row. */
  readonly rows: Int32Array;
  /** For ids without a row: 1 when admitted. */
  readonly admitted: Uint8Array;
  /** For ids without a row: an expired row to evict first, else −1. */
  readonly expired: Int32Array;
  /** For counting admission: the id's count after this push. */
  readonly pendingCounts: Uint32Array;
}

const sampleSize = 16;
/** Bytes a copy-on-write snapshot copies per turn of the event loop, between pushes. */
const copyBytesPerTurn = 8 << 20;
const maxCount = 0xffffffff;
const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * The rows of one sparse table held by one shard (its buckets): an `IdIndex` from ids to rows, a
 * `RowArena` of `dim` values plus the row optimizer's state per row, the table's step, and the
 * admission and eviction rules.
 *
 * A push is two calls with nothing else in between: `checkPush` validates everything and reserves
 * room for every row it would create, changing no row (a refusal, or a later refusal of another
 * part of the same push, leaves the table as it was); `apply` then cannot fail. Pulls never
 * create rows: a missing id reads its init value (or zeros), the same bytes a push would start it
 * from, also after an eviction.
 */
export class SparseTable {
  readonly name: string;
  readonly dim: number;
  readonly buckets: number;
  readonly optimizer: RowOptimizer;
  readonly stride: number;
  private options: SparseTableOptions;
  private readonly index: IdIndex;
  private readonly arena: RowArena;
  private readonly owned: Uint8Array;
  private readonly admission: AdmissionRule;
  private readonly probabilityThreshold: number;
  private readonly pullZero: boolean;
  private readonly sweepRowsPerPush: number;
  // Counting admission: ids not yet admitted → slot in `pendingCounts`.
  private readonly pending = new IdIndex({ initialCapacity: 8 });
  private pendingCounts = new Uint32Array(8);
  private pendingFree: number[] = [];
  private pendingHigh = 0;
  private sweepCursor = 0;
  private random: number;
  /** The ids `apply` evicts, while it runs. */
  private capturing: number[] | undefined;
  private stepValue = 0;
  private versionValue = 0;
  private createdTotal = 0;
  private rejectedTotal = 0;
  private evictedTotal = 0;
  // Ids evicted since the last snapshot (lo, hi pairs), for a delta; dropped when they outgrow
  // the table (a full snapshot is then cheaper than a delta anyway).
  private evictionLog = new Uint32Array(16);
  private evictionLogLength = 0;
  private evictionLogOverflowed = false;

  constructor(options: SparseTableOptions) {
    const { dim, buckets, shardIndex, shardCount } = options;
    if (!Number.isInteger(dim) || dim < 1 || dim > 4096)
      throw invalidArgument('dim', dim, 'must be an integer in [1, 4096]');
    this.options = options;
    this.name = options.name;
    this.dim = dim;
    this.buckets = buckets;
    this.optimizer = new RowOptimizer(options.optimizer, dim);
    this.stride = this.optimizer.layout.stride;
    const maxRows = options.maxRows;
    if (maxRows !== undefined && (!Number.isSafeInteger(maxRows) || maxRows < 1))
      throw invalidArgument('maxRows', maxRows, 'must be an integer ≥ 1');
    this.arena = new RowArena({
      stride: this.stride,
      ...(options.rowsPerChunk !== undefined && { rowsPerChunk: options.rowsPerChunk }),
      ...(maxRows !== undefined && { maxRows: Math.min(maxRows, 2 ** 31 - 2) }),
      ...(options.maxBytes !== undefined && { maxBytes: options.maxBytes }),
    });
    const expected = Math.min(options.expectedRows ?? 0, maxRows ?? Infinity, 2 ** 26);
    this.index = new IdIndex();
    if (expected > 0) this.index.reserve(expected);
    const shards = tableShards(options.name, buckets, shardCount);
    this.owned = new Uint8Array(buckets);
    for (let b = 0; b < buckets; b++) this.owned[b] = shards[b] === shardIndex ? 1 : 0;
    this.admission = options.admission ?? { kind: 'all' };
    this.probabilityThreshold =
      this.admission.kind === 'probabilistic' ? this.admission.probability * 2 ** 32 : 0;
    this.pullZero = options.pullMissing === 'zero';
    this.sweepRowsPerPush = options.sweepRowsPerPush ?? 65536;
    this.random = seededRandom(options);
  }

  /** Pushes that updated the table on this shard. */
  get step(): number {
    return this.stepValue;
  }

  /** Live rows. */
  get rows(): number {
    return this.arena.rows;
  }

  /** Totals since the table was created in this process. */
  get totals(): { rowsCreated: number; rowsRejected: number; rowsEvicted: number } {
    return {
      rowsCreated: this.createdTotal,
      rowsRejected: this.rejectedTotal,
      rowsEvicted: this.evictedTotal,
    };
  }

  /** Bytes a row takes: values and state, arena metadata, free list, about 1.4 index slots. */
  get bytesPerRow(): number {
    return 4 * this.stride + 17 + 4 + 18;
  }

  /**
   * The rows of `ids` (int64 LE, duplicates allowed), in request order, `dim` float32 each, and a
   * bitmap of the ids that have a row. Never creates a row.
   */
  getRows(ids: Uint8Array): { values: Float32Array; found: Uint8Array } {
    const { lo, hi } = this.readIds(ids);
    const n = lo.length;
    const dim = this.dim;
    const values = new Float32Array(n * dim);
    const found = new Uint8Array(Math.ceil(n / 8));
    const { shift, mask, stride } = this.arena;
    for (let k = 0; k < n; k++) {
      const row = this.index.get(lo[k]!, hi[k]!);
      if (row >= 0 && !this.isExpired(row)) {
        // An element loop, not `set` of a `subarray`: a view per row is an allocation per row,
        // and at thousands of rows per call the garbage collector's share showed in profiles.
        const source = this.arena.chunk(row >>> shift).values;
        const from = (row & mask) * stride;
        const to = k * dim;
        for (let i = 0; i < dim; i++) values[to + i] = source[from + i]!;
        found[k >>> 3]! |= 1 << (k & 7);
      } else if (!this.pullZero) {
        this.writeInit(lo[k]!, hi[k]!, values, k * dim);
      }
    }
    return { values, found };
  }

  /**
   * Checks one push of this table and reserves what applying it needs; changes no row. Throws
   * `EmbeddingError`: EMBEDDING_LENGTH_MISMATCH (ids not whole int64s, grads not ids × dim
   * float32, counts not one uint32 per id), EMBEDDING_WRONG_SHARD (an id of another shard's
   * bucket), EMBEDDING_NON_FINITE_GRADIENT (NaN or ±Infinity, also a sum of duplicates that
   * overflows), EMBEDDING_CAPACITY_EXHAUSTED (the new rows do not fit).
   */
  checkPush(grad: SparseGradBytes): PreparedSparsePush {
    const { lo: allLo, hi: allHi } = this.readIds(grad.ids);
    const n = allLo.length;
    const dim = this.dim;
    if (grad.grads.byteLength !== n * dim * 4) {
      throw lengthMismatch(
        'grads',
        `${grad.grads.byteLength} bytes, ${n} ids of dim ${dim} need ${n * dim * 4}`,
        grad.grads.byteLength,
      );
    }
    const counts = grad.counts;
    if (counts && counts.byteLength !== 0 && counts.byteLength !== n * 4) {
      throw lengthMismatch(
        'counts',
        `${counts.byteLength} bytes, ${n} ids need ${n * 4} (one uint32 each) or none`,
        counts.byteLength,
      );
    }
    const raw = new Float32Array(n * dim);
    new Uint8Array(raw.buffer).set(grad.grads);
    checkFinite(raw, dim);
    const rawCounts = counts && counts.byteLength > 0 ? new Uint32Array(n) : undefined;
    if (rawCounts && counts) new Uint8Array(rawCounts.buffer).set(counts);

    // Duplicates summed in order of first appearance.
    const merge = new IdIndex({ initialCapacity: Math.ceil(n / 0.7) + 1 });
    const lo = new Uint32Array(n);
    const hi = new Uint32Array(n);
    const occurrences = new Uint32Array(n);
    const sums = new Float32Array(n * dim);
    let unique = 0;
    for (let k = 0; k < n; k++) {
      const l = allLo[k]!;
      const h = allHi[k]!;
      let u = merge.get(l, h);
      // Offsets into `raw`, not a `subarray` per id (an allocation per id).
      const from = k * dim;
      if (u < 0) {
        u = unique++;
        merge.insert(l, h, u);
        lo[u] = l;
        hi[u] = h;
        const o = u * dim;
        for (let i = 0; i < dim; i++) sums[o + i] = raw[from + i]!;
      } else {
        const o = u * dim;
        for (let i = 0; i < dim; i++) sums[o + i] = sums[o + i]! + raw[from + i]!;
      }
      occurrences[u] = Math.min(occurrences[u]! + (rawCounts ? rawCounts[k]! : 1), maxCount);
    }
    const grads = sums.subarray(0, unique * dim);
    checkFinite(grads, dim);

    const rows = new Int32Array(unique);
    const admitted = new Uint8Array(unique);
    const expired = new Int32Array(unique).fill(-1);
    const pendingCounts = new Uint32Array(unique);
    let creating = 0;
    let newPending = 0;
    for (let u = 0; u < unique; u++) {
      const row = this.index.get(lo[u]!, hi[u]!);
      if (row >= 0 && !this.isExpired(row)) {
        rows[u] = row;
        continue;
      }
      rows[u] = -1;
      expired[u] = row;
      if (this.admit(lo[u]!, hi[u]!, occurrences[u]!, pendingCounts, u)) {
        admitted[u] = 1;
        creating++;
      } else if (this.pending.get(lo[u]!, hi[u]!) < 0) newPending++;
    }
    const room =
      this.options.maxRows === undefined
        ? creating
        : Math.min(creating, Math.max(0, this.options.maxRows - this.arena.rows));
    if (!this.arena.reserve(room) || !this.index.reserve(this.index.size + creating)) {
      throw new EmbeddingError(
        'EMBEDDING_CAPACITY_EXHAUSTED',
        `table ${this.name}: cannot hold ${creating} more rows (${this.arena.rows} held, ${this.arena.bytes} bytes); nothing of the push was applied`,
        'rows',
        creating,
      );
    }
    if (newPending > 0) this.reservePending(newPending);
    return {
      table: this,
      version: this.versionValue,
      lo: lo.subarray(0, unique),
      hi: hi.subarray(0, unique),
      occurrences: occurrences.subarray(0, unique),
      grads,
      rows,
      admitted,
      expired,
      pendingCounts,
    };
  }

  /**
   * Applies a push `checkPush` prepared (at table step + 1); cannot fail. Which rows a bound or an
   * age evicts depends on where rows lie in memory (sampled eviction, the sweep), which differs
   * between a table and a copy of it restored from a checkpoint: a replica passes the ids its
   * primary's apply of the same push evicted (`evictedIds` of its outcome), and evicts exactly
   * those instead, so both hold the same rows.
   */
  apply(push: PreparedSparsePush, replayEvictions?: Uint32Array): SparseOutcomeCounts {
    if (push.table !== this || push.version !== this.versionValue) {
      throw invalidArgument('push', push.version, 'was prepared for another state of the table');
    }
    this.versionValue++;
    const step = ++this.stepValue;
    const { lo, hi, occurrences, grads, rows, admitted, expired, pendingCounts } = push;
    const dim = this.dim;
    const { mask, stride } = this.arena;
    // checkPush validated every row and gradient: the unchecked kernel, no view per row.
    const kernel = this.optimizer.kernelAt(step);
    const update = (row: number, u: number): void => {
      kernel(this.arena.chunkToWrite(row).values, (row & mask) * stride, grads, u * dim);
      this.arena.touch(row, step, occurrences[u]);
    };
    const evictedBefore = this.evictedTotal;
    const evicted: number[] = [];
    this.capturing = evicted;
    let updated = 0;
    let created = 0;
    let rejected = 0;
    // Existing rows first: a row evicted to make room below is then never one still to update.
    for (let u = 0; u < rows.length; u++) {
      if (rows[u]! < 0) continue;
      update(rows[u]!, u);
      updated++;
    }
    // Replayed: the primary's evictions, those of rows that exist now; the others (rows this
    // push creates and a bound then evicts) once the new rows are in.
    const later: number[] = [];
    if (replayEvictions) {
      for (let k = 0; k + 1 < replayEvictions.length; k += 2) {
        const row = this.index.get(replayEvictions[k]!, replayEvictions[k + 1]!);
        if (row >= 0) this.evict(row);
        else later.push(replayEvictions[k]!, replayEvictions[k + 1]!);
      }
    } else for (let u = 0; u < rows.length; u++) if (expired[u]! >= 0) this.evict(expired[u]!);
    for (let u = 0; u < rows.length; u++) {
      if (rows[u]! >= 0) continue;
      const l = lo[u]!;
      const h = hi[u]!;
      if (!admitted[u]) {
        if (this.admission.kind === 'counting') this.setPending(l, h, pendingCounts[u]!);
        rejected++;
        continue;
      }
      if (this.admission.kind === 'counting') this.dropPending(l, h);
      if (
        !replayEvictions &&
        this.options.maxRows !== undefined &&
        this.arena.rows >= this.options.maxRows
      ) {
        this.evictSampled();
      }
      const row = this.arena.allocate();
      this.arena.setId(row, l, h);
      this.index.insert(l, h, row);
      const chunk = this.arena.chunkToWrite(row);
      this.writeInit(l, h, chunk.values, this.arena.offset(row));
      this.optimizer.initializeRow(chunk.values, row & mask);
      update(row, u);
      created++;
      updated++;
    }
    if (replayEvictions)
      for (let k = 0; k + 1 < later.length; k += 2) {
        const row = this.index.get(later[k]!, later[k + 1]!);
        if (row >= 0) this.evict(row);
      }
    else this.sweep();
    this.capturing = undefined;
    this.createdTotal += created;
    this.rejectedTotal += rejected;
    return {
      rowsUpdated: updated,
      rowsCreated: created,
      rowsRejected: rejected,
      rowsEvicted: this.evictedTotal - evictedBefore,
      evictedIds: Uint32Array.from(evicted),
    };
  }

  /**
   * Every row, as `snapshotAllRows` gives them, gathered into arrays at once (tests and tools).
   */
  snapshotRows(
    rowsPerSection: number,
    take: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(bytes),
  ): TableRowsSection[] {
    return [...this.snapshotAllRows(rowsPerSection, take).sections];
  }

  /**
   * Every row, as a full checkpoint takes it, and the start of a new delta (rows clean, eviction
   * log empty). The call itself only copies the arena's chunks whole into buffers from `take` — a
   * memory copy, what pushes wait for; iterating `sections` then orders that copy by bucket and
   * gathers one section of at most `rowsPerSection` rows at a time (in ascending bucket order,
   * each knowing its bucket range), so the work of ordering is spread between the writes of a
   * checkpoint. With `reuseSections`, every section is gathered into the same buffers (taken once
   * from `take`): for a reader done with a section before it asks for the next, as a checkpoint
   * writer is once it has encoded the section's frame.
   */
  snapshotAllRows(
    rowsPerSection: number,
    take: (bytes: number) => Uint8Array,
    reuseSections = false,
  ): { rows: number; sections: Iterable<TableRowsSection> } {
    const rows = this.beginFullSnapshot();
    const copies: RowChunk[] = [];
    for (let c = 0; c < this.arena.chunkCount; c++) copies.push(this.copyChunk(c, take));
    const order = runToEnd(this.orderRows(copies));
    return {
      rows,
      sections: this.gatherSections(copies, order, rowsPerSection, take, reuseSections),
    };
  }

  /**
   * The same rows as `snapshotAllRows`, of the table as it is now, taken copy-on-write: the call
   * only starts a new delta (pushes wait for nothing more). A push keeps the bytes of each row it
   * changes first, and `sections` copies the arena's chunks into buffers from `take` a few MiB per
   * turn of the event loop, puts the kept rows back into the copy, orders it by bucket (yielding
   * to pushes every 64 Ki rows) and gives the sections as `snapshotAllRows` does. `cancel` gives
   * the snapshot up (no push keeps anything for it any more).
   */
  startSnapshotAllRows(
    rowsPerSection: number,
    take: (bytes: number) => Uint8Array,
    reuseSections = false,
  ): { rows: number; sections(): Promise<Iterable<TableRowsSection>>; cancel(): void } {
    const rows = this.beginFullSnapshot();
    const copies: RowChunk[] = [];
    const pending = this.arena.copyOnWrite((c) => (copies[c] = this.copyChunk(c, take)), take);
    let cancelled = false;
    const chunkBytes = this.arena.bytes / Math.max(1, this.arena.chunkCount);
    return {
      rows,
      sections: async () => {
        try {
          let sinceYield = 0;
          for (let c = 0; c < pending.chunks; c++) {
            if (cancelled) throw new Error(`table ${this.name}: the snapshot was cancelled`);
            if (pending.copyNow(c)) sinceYield += chunkBytes;
            if (sinceYield >= copyBytesPerTurn) {
              sinceYield = 0;
              await nextTurn();
            }
          }
          pending.restoreKept(copies);
        } finally {
          pending.drop();
        }
        const ordering = this.orderRows(copies);
        let step = ordering.next();
        while (!step.done) {
          await nextTurn();
          step = ordering.next();
        }
        return this.gatherSections(copies, step.value, rowsPerSection, take, reuseSections);
      },
      cancel: () => {
        cancelled = true;
        pending.drop();
      },
    };
  }

  /** A full snapshot begins: a new delta starts (rows clean, eviction log empty); live rows. */
  private beginFullSnapshot(): number {
    this.clearEvictionLog();
    this.arena.clearDirty();
    return this.arena.rows;
  }

  /** A copy of the arena's chunk `c` in buffers from `take`. */
  private copyChunk(c: number, take: (bytes: number) => Uint8Array): RowChunk {
    const chunk = this.arena.chunk(c);
    const copy = <T extends Float32Array | Uint32Array | Uint8Array>(
      from: T,
      view: (bytes: Uint8Array) => T,
    ): T => {
      const to = view(take(from.byteLength));
      to.set(from as never);
      return to;
    };
    return {
      values: copy(chunk.values, floatView),
      idLo: copy(chunk.idLo, uint32View),
      idHi: copy(chunk.idHi, uint32View),
      lastSeen: copy(chunk.lastSeen, uint32View),
      count: copy(chunk.count, uint32View),
      flags: copy(chunk.flags, (bytes) => bytes),
    };
  }

  /**
   * Feeds the table's step and every live row (id, last step, count, values) in ascending id
   * order to `update`, changing nothing: two tables that took the same pushes in the same order
   * feed the same bytes however their rows are laid out (a restored copy's layout differs from
   * its original's). Counting admission's pending ids are left out.
   */
  digest(update: (bytes: Uint8Array) => void): void {
    const rows: { lo: number; hi: number; c: number; i: number }[] = [];
    for (let c = 0; c < this.arena.chunkCount; c++) {
      const { flags, idLo, idHi } = this.arena.chunk(c);
      for (let i = 0; i < flags.length; i++)
        if ((flags[i]! & rowFlags.live) !== 0) rows.push({ lo: idLo[i]!, hi: idHi[i]!, c, i });
    }
    rows.sort((a, b) => a.hi - b.hi || a.lo - b.lo);
    const head = new Uint32Array(4);
    head[0] = this.step;
    head[1] = rows.length;
    update(new Uint8Array(head.buffer.slice(0)));
    const stride = this.stride;
    for (const { lo, hi, c, i } of rows) {
      const chunk = this.arena.chunk(c);
      head[0] = lo;
      head[1] = hi;
      head[2] = chunk.lastSeen[i]!;
      head[3] = chunk.count[i]!;
      update(new Uint8Array(head.buffer.slice(0)));
      update(
        new Uint8Array(chunk.values.buffer, chunk.values.byteOffset + i * stride * 4, stride * 4),
      );
    }
  }

  /**
   * Bytes the next `snapshotChanges` would copy (rows pushed and ids evicted since the last
   * snapshot), or Infinity when it would give none (the eviction log overflowed): what a
   * checkpoint weighs before choosing between a delta and a full copy.
   */
  get changedBytes(): number {
    if (this.evictionLogOverflowed) return Infinity;
    return this.arena.dirtyRows * (4 * this.stride + 16) + 8 * this.evictionLogLength;
  }

  /**
   * What changed since the last snapshot, as a delta takes it: the rows pushed since (sections
   * as `snapshotRows` gives them) and the ids evicted since (int64 LE), or `undefined` when the
   * eviction log outgrew the table (take a full snapshot instead). Starts the next delta.
   */
  snapshotChanges(
    rowsPerSection: number,
    take: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(bytes),
  ): { sections: TableRowsSection[]; evictedIds: Uint8Array } | undefined {
    if (this.evictionLogOverflowed) return undefined;
    const evictedIds = take(8 * this.evictionLogLength);
    const view = new DataView(evictedIds.buffer, evictedIds.byteOffset, evictedIds.byteLength);
    for (let k = 0; k < 2 * this.evictionLogLength; k++)
      view.setUint32(4 * k, this.evictionLog[k]!, true);
    this.clearEvictionLog();
    return {
      sections: this.rowsInSections(this.arena.takeDirty(), rowsPerSection, take),
      evictedIds,
    };
  }

  /**
   * `rows` (row numbers of the arena, each once; sorted here) in ascending bucket order, gathered
   * into sections of at most `rowsPerSection` rows in buffers from `take`, each knowing its bucket
   * range. The rows are read in ascending row order, so that each chunk's memory is visited once,
   * and written to their places (a counting sort by bucket): a delta's rows lie scattered over
   * the whole table, and reading them in bucket order cost a cache and TLB miss per column.
   */
  private rowsInSections(
    rows: Int32Array,
    rowsPerSection: number,
    take: (bytes: number) => Uint8Array,
  ): TableRowsSection[] {
    rows.sort();
    const n = rows.length;
    const { shift, mask, stride } = this.arena;
    const bucket = new Uint32Array(n);
    const starts = new Uint32Array(this.buckets);
    for (let k = 0; k < n; k++) {
      const row = rows[k]!;
      const { idLo, idHi } = this.arena.chunk(row >>> shift);
      starts[(bucket[k] = this.bucketOfRow(idLo[row & mask]!, idHi[row & mask]!))]!++;
    }
    for (let b = 0, sum = 0; b < this.buckets; b++) {
      const count = starts[b]!;
      starts[b] = sum;
      sum += count;
    }
    const ids = uint32View(take(8 * n));
    const values = floatView(take(4 * stride * n));
    const lastSeen = uint32View(take(4 * n));
    const count = uint32View(take(4 * n));
    for (let k = 0; k < n; k++) {
      const row = rows[k]!;
      const chunk = this.arena.chunk(row >>> shift);
      const i = row & mask;
      const at = starts[bucket[k]!]!++;
      ids[2 * at] = chunk.idLo[i]!;
      ids[2 * at + 1] = chunk.idHi[i]!;
      for (let e = 0; e < stride; e++) values[at * stride + e] = chunk.values[i * stride + e]!;
      lastSeen[at] = chunk.lastSeen[i]!;
      count[at] = chunk.count[i]!;
    }
    const sections: TableRowsSection[] = [];
    for (let first = 0; first < n; first += rowsPerSection) {
      const last = Math.min(n, first + rowsPerSection) - 1;
      sections.push({
        ids: new Uint8Array(ids.buffer, ids.byteOffset + 8 * first, 8 * (last + 1 - first)),
        values: values.subarray(first * stride, (last + 1) * stride),
        lastSeen: lastSeen.subarray(first, last + 1),
        count: count.subarray(first, last + 1),
        firstBucket: this.bucketOfRow(ids[2 * first]!, ids[2 * first + 1]!),
        lastBucket: this.bucketOfRow(ids[2 * last]!, ids[2 * last + 1]!),
      });
    }
    return sections;
  }

  /**
   * The live rows of `chunks` in ascending bucket order (a counting sort: one pass counts rows per
   * bucket, one lists each row at its place), as row numbers (`c * rowsPerChunk + i`). A
   * generator that pauses every 64 Ki rows, so that a caller may let pushes in between; `chunks`
   * must not change meanwhile (a snapshot's copies).
   */
  private *orderRows(chunks: readonly RowChunk[]): Generator<undefined, Uint32Array, undefined> {
    const { rowsPerChunk } = this.arena;
    const rowsPerPause = 1 << 16;
    const starts = new Uint32Array(this.buckets);
    let n = 0;
    let sincePause = 0;
    for (const { flags, idLo, idHi } of chunks) {
      for (let i = 0; i < rowsPerChunk; i++) {
        if ((flags[i]! & rowFlags.live) === 0) continue;
        starts[this.bucketOfRow(idLo[i]!, idHi[i]!)]!++;
        n++;
      }
      if ((sincePause += rowsPerChunk) >= rowsPerPause) {
        sincePause = 0;
        yield;
      }
    }
    for (let b = 0, sum = 0; b < this.buckets; b++) {
      const count = starts[b]!;
      starts[b] = sum;
      sum += count;
    }
    const order = new Uint32Array(n);
    for (let c = 0; c < chunks.length; c++) {
      const { flags, idLo, idHi } = chunks[c]!;
      for (let i = 0; i < rowsPerChunk; i++) {
        if ((flags[i]! & rowFlags.live) === 0) continue;
        order[starts[this.bucketOfRow(idLo[i]!, idHi[i]!)]!++] = c * rowsPerChunk + i;
      }
      if ((sincePause += rowsPerChunk) >= rowsPerPause) {
        sincePause = 0;
        yield;
      }
    }
    return order;
  }

  /**
   * The rows `order` lists (`orderRows`) of `chunks`, gathered a section of at most
   * `rowsPerSection` rows at a time into buffers from `take` (the same ones for every section
   * with `reuse`), each section knowing its bucket range.
   */
  private *gatherSections(
    chunks: readonly RowChunk[],
    order: Uint32Array,
    rowsPerSection: number,
    take: (bytes: number) => Uint8Array,
    reuse = false,
  ): Generator<TableRowsSection> {
    const { stride, shift, mask: rowMask } = this.arena;
    const bucketOf = (lo: number, hi: number): number => this.bucketOfRow(lo, hi);
    const n = order.length;
    if (n === 0) return;
    // Typed-array columns, as the values always were: little-endian on every host Node runs on
    // for this (x86-64, arm64).
    const columns = (m: number) => ({
      ids: uint32View(take(8 * m)),
      values: floatView(take(4 * stride * m)),
      lastSeen: uint32View(take(4 * m)),
      count: uint32View(take(4 * m)),
    });
    const shared = reuse ? columns(Math.min(n, rowsPerSection)) : undefined;
    for (let first = 0; first < n; first += rowsPerSection) {
      const m = Math.min(n, first + rowsPerSection) - first;
      const own = shared ?? columns(m);
      const ids = own.ids.subarray(0, 2 * m);
      const values = own.values.subarray(0, stride * m);
      const lastSeen = own.lastSeen.subarray(0, m);
      const count = own.count.subarray(0, m);
      for (let k = 0; k < m; k++) {
        const row = order[first + k]!;
        const chunk = chunks[row >>> shift]!;
        const i = row & rowMask;
        ids[2 * k] = chunk.idLo[i]!;
        ids[2 * k + 1] = chunk.idHi[i]!;
        // An element loop, not `set` of a `subarray`: no allocation per row.
        const from = i * stride;
        const to = k * stride;
        for (let e = 0; e < stride; e++) values[to + e] = chunk.values[from + e]!;
        lastSeen[k] = chunk.lastSeen[i]!;
        count[k] = chunk.count[i]!;
      }
      yield {
        ids: new Uint8Array(ids.buffer, ids.byteOffset, 8 * m),
        values,
        lastSeen,
        count,
        firstBucket: bucketOf(ids[0]!, ids[1]!),
        lastBucket: bucketOf(ids[2 * m - 2]!, ids[2 * m - 1]!),
      };
    }
  }

  /** Ids waiting for admission by count, copied. */
  snapshotPending(): PendingAdmissions {
    const ids: number[] = [];
    const counts: number[] = [];
    this.pending.forEach((lo, hi, slot) => {
      ids.push(lo, hi);
      counts.push(this.pendingCounts[slot]!);
    });
    return { ids: new Uint8Array(Uint32Array.from(ids).buffer), counts: Uint32Array.from(counts) };
  }

  /**
   * Restores a checkpoint's state into this (new, empty) table: its step, its pending admissions
   * and its rows, each row's bytes, lastSeen and count as they were.
   */
  restore(step: number, pending: PendingAdmissions, sections: readonly TableRowsSection[]): void {
    this.restoreState(step, pending);
    for (const section of sections) this.restoreRows(section);
  }

  /** The first part of `restore`: the step and the pending admissions, into an empty table. */
  restoreState(step: number, pending: PendingAdmissions): void {
    if (this.arena.rows > 0 || this.stepValue > 0 || this.pending.size > 0)
      throw invalidArgument('restore', this.name, 'needs an empty table');
    if (!Number.isSafeInteger(step) || step < 0) throw invalidArgument('step', step, 'must be ≥ 0');
    this.stepValue = step;
    const { lo, hi } = this.readIds(pending.ids, false);
    if (pending.counts.length !== lo.length)
      throw lengthMismatch('pending.counts', 'one count per pending id', pending.counts.length);
    this.reservePending(lo.length);
    for (let k = 0; k < lo.length; k++) this.setPending(lo[k]!, hi[k]!, pending.counts[k]!);
  }

  /**
   * Applies a delta's table state on a restored table: its step and pending admissions replace
   * the table's (rows stay; `removeRows` and `restoreRows(…, true)` bring them up to date).
   */
  replaceState(step: number, pending: PendingAdmissions): void {
    if (!Number.isSafeInteger(step) || step < 0) throw invalidArgument('step', step, 'must be ≥ 0');
    const { lo, hi } = this.readIds(pending.ids, false);
    if (pending.counts.length !== lo.length)
      throw lengthMismatch('pending.counts', 'one count per pending id', pending.counts.length);
    const stale: number[] = [];
    this.pending.forEach((idLo, idHi) => stale.push(idLo, idHi));
    for (let k = 0; k < stale.length; k += 2) this.dropPending(stale[k]!, stale[k + 1]!);
    this.stepValue = step;
    this.reservePending(lo.length);
    for (let k = 0; k < lo.length; k++) this.setPending(lo[k]!, hi[k]!, pending.counts[k]!);
  }

  /**
   * Makes this table shard `shardIndex` of `shardCount` in place, as a live change of the job's
   * shard count does with a table it keeps: the rows and pending admissions of the buckets it no
   * longer holds are dropped (another shard takes them over: not evictions), its step is raised
   * to `step` and every row's last-seen step with it (their ages stay), and it goes on as a
   * restored table would (no eviction logged, no sweep begun, the admission's random stream from
   * its seed). The rows and pending admissions of the buckets it gains are added after
   * (`restoreRows`, `addPending`).
   */
  reshard(shardIndex: number, shardCount: number, step: number): void {
    if (!Number.isSafeInteger(step) || step < this.stepValue)
      throw invalidArgument(
        'step',
        step,
        `must be an integer ≥ the table's step ${this.stepValue}`,
      );
    const shards = tableShards(this.name, this.buckets, shardCount);
    // A table that keeps every bucket it held (a shrink's survivor) drops nothing: no row is
    // hashed, and none is visited unless its last-seen step moves.
    let losesBuckets = false;
    for (let b = 0; b < this.buckets; b++) {
      const owned = shards[b] === shardIndex ? 1 : 0;
      if (this.owned[b] === 1 && owned === 0) losesBuckets = true;
      this.owned[b] = owned;
    }
    this.options = { ...this.options, shardIndex, shardCount };
    const held = (lo: number, hi: number): boolean => this.owned[this.bucketOfRow(lo, hi)] === 1;
    const shift = step - this.stepValue;
    for (let c = 0; c < this.arena.chunkCount && (losesBuckets || shift !== 0); c++) {
      const { flags, idLo, idHi, lastSeen } = this.arena.writableChunk(c);
      for (let i = 0; i < flags.length; i++) {
        if ((flags[i]! & rowFlags.live) === 0) continue;
        if (!losesBuckets || held(idLo[i]!, idHi[i]!)) lastSeen[i]! += shift;
        else {
          this.index.delete(idLo[i]!, idHi[i]!);
          this.arena.free((c << this.arena.shift) | i);
        }
      }
    }
    const dropped: number[] = [];
    if (losesBuckets)
      this.pending.forEach((lo, hi) => {
        if (!held(lo, hi)) dropped.push(lo, hi);
      });
    for (let k = 0; k < dropped.length; k += 2) this.dropPending(dropped[k]!, dropped[k + 1]!);
    this.stepValue = step;
    this.clearEvictionLog();
    this.sweepCursor = 0;
    this.random = seededRandom(this.options);
  }

  /**
   * Adds the live rows of `other`'s buckets that `keep` marks (1 per bucket), as they are, their
   * last-seen steps raised by `shift`: what a live change's merge takes from a part it does not
   * keep, row to row in one pass (no rows copied out in between, no snapshot, no ordering by
   * bucket). `other` must be alike (its stride) and is left as it was; an id both tables hold is
   * refused before anything changes.
   */
  takeRows(other: SparseTable, keep: Uint8Array, shift: number): void {
    if (other.stride !== this.stride)
      throw lengthMismatch('other', `rows of stride ${this.stride}`, other.stride);
    if (keep.length !== other.buckets)
      throw invalidArgument(
        'keep',
        keep.length,
        `must have one entry per bucket (${other.buckets})`,
      );
    // Every bucket `other` holds kept (a part copied for its share alone): no row is hashed.
    const keepsAll = other.owned.every((owned, b) => owned === 0 || keep[b] === 1);
    const kept = (lo: number, hi: number): boolean =>
      keepsAll || keep[other.bucketOfRow(lo, hi)] === 1;
    let n = 0;
    for (let c = 0; c < other.arena.chunkCount; c++) {
      const { flags, idLo, idHi } = other.arena.chunk(c);
      for (let i = 0; i < flags.length; i++) {
        if ((flags[i]! & rowFlags.live) === 0 || !kept(idLo[i]!, idHi[i]!)) continue;
        if (this.index.get(idLo[i]!, idHi[i]!) >= 0)
          throw invalidArgument('ids', n, 'hold an id twice');
        n++;
      }
    }
    if (!this.arena.reserve(n) || !this.index.reserve(this.index.size + n))
      throw new EmbeddingError(
        'EMBEDDING_CAPACITY_EXHAUSTED',
        `table ${this.name}: cannot take ${n} more rows`,
        'rows',
        n,
      );
    const stride = this.stride;
    for (let c = 0; c < other.arena.chunkCount; c++) {
      const from = other.arena.chunk(c);
      const { flags, idLo, idHi } = from;
      for (let i = 0; i < flags.length; i++) {
        if ((flags[i]! & rowFlags.live) === 0 || !kept(idLo[i]!, idHi[i]!)) continue;
        const row = this.arena.allocate();
        this.arena.setId(row, idLo[i]!, idHi[i]!);
        this.index.insert(idLo[i]!, idHi[i]!, row);
        const to = this.arena.chunkToWrite(row);
        const j = row & this.arena.mask;
        to.values.set(from.values.subarray(i * stride, (i + 1) * stride), j * stride);
        to.lastSeen[j] = from.lastSeen[i]! + shift;
        to.count[j] = from.count[i]!;
      }
    }
  }

  /** The bucket of the id whose halves are `lo` and `hi` (`bucketOfId`, without its checks). */
  private bucketOfRow(lo: number, hi: number): number {
    return fmix32((lo ^ fmix32(hi)) >>> 0) & (this.buckets - 1);
  }

  /** Adds pending admissions of ids this table does not count yet (a bucket it gains). */
  addPending(pending: PendingAdmissions): void {
    const { lo, hi } = this.readIds(pending.ids);
    if (pending.counts.length !== lo.length)
      throw lengthMismatch('pending.counts', 'one count per pending id', pending.counts.length);
    this.reservePending(lo.length);
    for (let k = 0; k < lo.length; k++) {
      if (this.pending.get(lo[k]!, hi[k]!) >= 0)
        throw invalidArgument('pending.ids', k, 'is pending already');
      this.setPending(lo[k]!, hi[k]!, pending.counts[k]!);
    }
  }

  /** Removes the rows of `ids` (int64 LE) that exist, as a delta's evictions say; not counted as evictions. */
  removeRows(ids: Uint8Array): void {
    const { lo, hi } = this.readIds(ids, false);
    for (let k = 0; k < lo.length; k++) {
      const row = this.index.delete(lo[k]!, hi[k]!);
      if (row >= 0) this.arena.free(row);
    }
  }

  /**
   * The second part of `restore`, once per section: rows as `snapshotRows` gave them. With
   * `replace` (a delta's rows), an id that has a row gets the section's bytes; without, an id
   * given twice is an error. Restored rows are clean.
   */
  restoreRows(section: TableRowsSection, replace = false): void {
    const stride = this.stride;
    const { lo, hi } = this.readIds(section.ids, false);
    const n = lo.length;
    if (section.values.length !== n * stride)
      throw lengthMismatch('values', `${n} rows of stride ${stride}`, section.values.length);
    if (section.lastSeen.length !== n || section.count.length !== n)
      throw lengthMismatch('lastSeen', `one per row (${n})`, section.lastSeen.length);
    let fresh = n;
    if (replace) for (let k = 0; k < n; k++) if (this.index.get(lo[k]!, hi[k]!) >= 0) fresh--;
    if (!this.arena.reserve(fresh) || !this.index.reserve(this.index.size + fresh)) {
      throw new EmbeddingError(
        'EMBEDDING_CAPACITY_EXHAUSTED',
        `table ${this.name}: cannot restore ${fresh} more rows`,
        'rows',
        n,
      );
    }
    for (let k = 0; k < n; k++) {
      let row = this.index.get(lo[k]!, hi[k]!);
      if (row >= 0 && !replace) throw invalidArgument('ids', k, 'hold an id twice');
      if (row < 0) {
        row = this.arena.allocate();
        this.arena.setId(row, lo[k]!, hi[k]!);
        this.index.insert(lo[k]!, hi[k]!, row);
      }
      const chunk = this.arena.chunkToWrite(row);
      const i = row & this.arena.mask;
      const from = k * stride;
      const to = i * stride;
      for (let e = 0; e < stride; e++) chunk.values[to + e] = section.values[from + e]!;
      chunk.lastSeen[i] = section.lastSeen[k]!;
      chunk.count[i] = section.count[k]!;
    }
  }

  private writeInit(lo: number, hi: number, out: Float32Array, offset: number): void {
    writeInitRow(
      this.options.init,
      this.options.seedLo,
      this.options.seedHi,
      lo,
      hi,
      out,
      offset,
      this.dim,
    );
  }

  private isExpired(row: number): boolean {
    const ttl = this.options.ttlSteps;
    if (ttl === undefined) return false;
    const lastSeen = this.arena.chunk(row >>> this.arena.shift).lastSeen[row & this.arena.mask]!;
    return this.stepValue - lastSeen > ttl;
  }

  /** Whether a new id is admitted now; for counting, records its count after this push. */
  private admit(lo: number, hi: number, occ: number, out: Uint32Array, u: number): boolean {
    const rule = this.admission;
    switch (rule.kind) {
      case 'all':
        return true;
      case 'probabilistic':
        return (
          admissionHash(this.options.seedLo, this.options.seedHi, lo, hi) <
          this.probabilityThreshold
        );
      case 'counting': {
        const slot = this.pending.get(lo, hi);
        const prior = slot < 0 ? 0 : this.pendingCounts[slot]!;
        const count = Math.min(prior + occ, maxCount);
        out[u] = count;
        return count >= rule.minCount;
      }
    }
  }

  private reservePending(more: number): void {
    const needed = this.pendingHigh + Math.max(0, more - this.pendingFree.length);
    if (needed > this.pendingCounts.length) {
      let length = this.pendingCounts.length;
      while (length < needed) length *= 2;
      const grown = new Uint32Array(length);
      grown.set(this.pendingCounts);
      this.pendingCounts = grown;
    }
    if (!this.pending.reserve(this.pending.size + more)) {
      throw new EmbeddingError(
        'EMBEDDING_CAPACITY_EXHAUSTED',
        `table ${this.name}: cannot count ${more} more ids for admission`,
        'pending',
        more,
      );
    }
  }

  private setPending(lo: number, hi: number, count: number): void {
    let slot = this.pending.get(lo, hi);
    if (slot < 0) {
      slot = this.pendingFree.pop() ?? this.pendingHigh++;
      this.pending.insert(lo, hi, slot);
    }
    this.pendingCounts[slot] = count;
  }

  private dropPending(lo: number, hi: number): void {
    const slot = this.pending.delete(lo, hi);
    if (slot >= 0) this.pendingFree.push(slot);
  }

  private evict(row: number): void {
    const chunk = this.arena.chunk(row >>> this.arena.shift);
    const i = row & this.arena.mask;
    this.capturing?.push(chunk.idLo[i]!, chunk.idHi[i]!);
    this.index.delete(chunk.idLo[i]!, chunk.idHi[i]!);
    this.arena.free(row);
    this.evictedTotal++;
    this.logEviction(chunk.idLo[i]!, chunk.idHi[i]!);
  }

  private logEviction(lo: number, hi: number): void {
    if (this.evictionLogOverflowed) return;
    if (this.evictionLogLength >= Math.max(65536, this.arena.rows)) {
      this.evictionLogOverflowed = true;
      this.evictionLog = new Uint32Array(16);
      this.evictionLogLength = 0;
      return;
    }
    if (2 * this.evictionLogLength + 2 > this.evictionLog.length) {
      const grown = new Uint32Array(2 * this.evictionLog.length);
      grown.set(this.evictionLog);
      this.evictionLog = grown;
    }
    this.evictionLog[2 * this.evictionLogLength] = lo;
    this.evictionLog[2 * this.evictionLogLength + 1] = hi;
    this.evictionLogLength++;
  }

  private clearEvictionLog(): void {
    this.evictionLogLength = 0;
    this.evictionLogOverflowed = false;
    if (this.evictionLog.length > 65536) this.evictionLog = new Uint32Array(16);
  }

  /** Sampled LRU: of up to 16 random live rows, evicts the one pushed longest ago. */
  private evictSampled(): void {
    const capacity = this.arena.capacity;
    let best = -1;
    let bestSeen = Infinity;
    let sampled = 0;
    for (let attempt = 0; sampled < sampleSize && attempt < 64 * sampleSize; attempt++) {
      this.random ^= this.random << 13;
      this.random ^= this.random >>> 17;
      this.random ^= this.random << 5;
      const row = (this.random >>> 0) % capacity;
      if (!this.arena.isLive(row)) continue;
      sampled++;
      const seen = this.arena.chunk(row >>> this.arena.shift).lastSeen[row & this.arena.mask]!;
      if (seen < bestSeen) {
        best = row;
        bestSeen = seen;
      }
    }
    if (best < 0)
      for (let row = 0; row < capacity && best < 0; row++) if (this.arena.isLive(row)) best = row;
    if (best >= 0) this.evict(best);
  }

  /**
   * Evicts rows unseen for more than `ttlSteps`: the whole table when it is within
   * `sweepRowsPerPush` rows, else the next slice of that many (rows expired but not yet swept
   * read as missing and are replaced when pushed, so the slicing is not observable).
   */
  private sweep(): void {
    if (this.options.ttlSteps === undefined) return;
    const capacity = this.arena.capacity;
    const budget = Math.min(capacity, this.sweepRowsPerPush);
    for (let k = 0; k < budget; k++) {
      const row = this.sweepCursor;
      this.sweepCursor = (this.sweepCursor + 1) % capacity;
      if (this.arena.isLive(row) && this.isExpired(row)) this.evict(row);
    }
  }

  private readIds(ids: Uint8Array, checkShard = true): { lo: Uint32Array; hi: Uint32Array } {
    if (ids.byteLength % 8 !== 0) {
      throw lengthMismatch(
        'ids',
        `${ids.byteLength} bytes is not a whole number of int64 ids`,
        ids.byteLength,
      );
    }
    const n = ids.byteLength / 8;
    const lo = new Uint32Array(n);
    const hi = new Uint32Array(n);
    if (littleEndian && ids.byteOffset % 4 === 0) {
      const words = new Uint32Array(ids.buffer, ids.byteOffset, 2 * n);
      for (let k = 0; k < n; k++) {
        lo[k] = words[2 * k]!;
        hi[k] = words[2 * k + 1]!;
      }
    } else {
      const view = new DataView(ids.buffer, ids.byteOffset, ids.byteLength);
      for (let k = 0; k < n; k++) {
        lo[k] = view.getUint32(8 * k, true);
        hi[k] = view.getUint32(8 * k + 4, true);
      }
    }
    if (checkShard) {
      const buckets = bucketsOfIds(ids, this.buckets);
      for (let k = 0; k < n; k++) {
        if (this.owned[buckets[k]!] === 1) continue;
        const id = (BigInt(hi[k]!) << 32n) | BigInt(lo[k]!);
        throw new EmbeddingError(
          'EMBEDDING_WRONG_SHARD',
          `table ${this.name}: id ${BigInt.asIntN(64, id)} (entry ${k}) is in bucket ${buckets[k]}, which shard ${this.options.shardIndex} of ${this.options.shardCount} does not hold`,
          'ids',
          k,
        );
      }
    }
    return { lo, hi };
  }
}

/** The admission's random stream as a new table starts it. */
/** What a generator that only pauses returns, run without pausing. */
function runToEnd<T>(work: Generator<undefined, T, undefined>): T {
  let step = work.next();
  while (!step.done) step = work.next();
  return step.value;
}

function seededRandom(options: SparseTableOptions): number {
  return fmix32((options.seedLo ^ fmix32(options.seedHi ^ 0x2545f491)) >>> 0) || 1;
}

/**
 * The hash probabilistic admission compares with p · 2^32:
 * `fmix32(fmix32(fmix32(fmix32(seed_lo ^ 0x5eed) ^ seed_hi) ^ lo) ^ hi)`.
 */
export function admissionHash(seedLo: number, seedHi: number, lo: number, hi: number): number {
  const keyed = fmix32(fmix32((seedLo ^ 0x5eed) >>> 0) ^ seedHi);
  return fmix32((fmix32((keyed ^ lo) >>> 0) ^ hi) >>> 0);
}

function checkFinite(values: Float32Array, dim: number): void {
  for (let i = 0; i < values.length; i++) {
    if (Number.isFinite(values[i]!)) continue;
    throw new EmbeddingError(
      'EMBEDDING_NON_FINITE_GRADIENT',
      `grads: element ${i % dim} of row entry ${Math.floor(i / dim)} is ${String(values[i])} (or a sum of duplicates overflowed)`,
      'grads',
      i,
    );
  }
}

function lengthMismatch(field: string, reason: string, value: unknown): EmbeddingError {
  return new EmbeddingError('EMBEDDING_LENGTH_MISMATCH', `${field}: ${reason}`, field, value);
}

function floatView(bytes: Uint8Array): Float32Array {
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

function uint32View(bytes: Uint8Array): Uint32Array {
  return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}
