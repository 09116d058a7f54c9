import { capacityExhausted, invalidArgument } from './errors';
import { indexHash } from './hash';

/** Options of an `IdIndex`. */
export interface IdIndexOptions {
  /** Slots at first, rounded up to a power of two (at least 8). Prefer `reserve(expectedRows)`. */
  initialCapacity?: number;
  /**
   * Slots of the old table migrated by each `insert` or `delete` while the index grows. At least
   * 2 keeps a migration ahead of the next doubling; `Infinity` rehashes everything in the insert
   * that crosses the load limit (the stop-the-world baseline the benchmark compares against).
   */
  migrateSlotsPerOp?: number;
}

export const defaultIdIndexOptions: Required<IdIndexOptions> = {
  initialCapacity: 1024,
  migrateSlotsPerOp: 16,
};

/** Entries per slot above which the index grows. */
export const maxLoad = 0.7;
/** 2^30 slots are 12 GiB of keys and rows; past that, insert and reserve refuse. */
export const maxIdIndexCapacity = 2 ** 30;
const maxRow = 2 ** 31 - 2; // slots store row + 1

const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const noSlots = new Uint32Array(0);

/**
 * A hash index from signed 64-bit ids, given as two uint32 halves `(lo, hi)`, to rows (int32 ≥ 0).
 *
 * Open addressing over typed arrays (no `Map`, no BigInt): power-of-two capacity, linear probing
 * from `indexHash(lo, hi)`, at most `maxLoad` entries per slot, backward-shift deletion (no
 * tombstones, so eviction churn never degrades probes).
 *
 * Growth doubles the capacity without a stall: the insert that crosses the load limit allocates the
 * new table and keeps the old one; from then on every insert and delete moves
 * `migrateSlotsPerOp` old slots across, and lookups consult both tables until the old one is empty.
 *
 * A slot holds row + 1, so 0 means empty: a freshly allocated (zeroed) table needs no fill, and
 * its pages are touched gradually by the migration instead of all at once by the growing insert.
 */
export class IdIndex {
  // Slot i is words 3i, 3i + 1, 3i + 2 of `table`: the id's low and high halves and row + 1. One
  // array, not three: a lookup in a table larger than the cache then misses once, not three times.
  private table: Uint32Array;
  private mask: number;
  private limit: number;
  private entries = 0;

  // The old table while a growth is migrating. Its positions are processed in cyclic order from
  // `oldStart` (a slot that was empty when the growth began, so no probe run crosses into it); the
  // first `oldMigrated` of them are empty, and a probe whose home falls among them starts at the
  // first unprocessed position instead.
  private old: Uint32Array = noSlots;
  private oldMask = 0;
  private oldStart = 0;
  private oldMigrated = 0;
  private oldLeft = 0;

  private readonly migrateSlotsPerOp: number;

  constructor(options: IdIndexOptions = {}) {
    const { initialCapacity, migrateSlotsPerOp } = { ...defaultIdIndexOptions, ...options };
    if (!(migrateSlotsPerOp >= 1)) {
      throw invalidArgument('migrateSlotsPerOp', migrateSlotsPerOp, 'must be at least 1');
    }
    if (!(initialCapacity >= 0) || initialCapacity > maxIdIndexCapacity) {
      throw invalidArgument('initialCapacity', initialCapacity, `must be in [0, 2^30]`);
    }
    this.migrateSlotsPerOp = migrateSlotsPerOp;
    const capacity = Math.max(8, nextPowerOfTwo(initialCapacity));
    this.table = new Uint32Array(3 * capacity);
    this.mask = capacity - 1;
    this.limit = Math.floor(capacity * maxLoad);
  }

  /** Ids held. */
  get size(): number {
    return this.entries;
  }

  /** Slots of the current table (the one new ids go to). */
  get capacity(): number {
    return this.mask + 1;
  }

  /** True while a growth still has entries to move out of the old table. */
  get migrating(): boolean {
    return this.oldLeft > 0;
  }

  /** Entries still in the old table. */
  get pendingMigration(): number {
    return this.oldLeft;
  }

  /** Bytes of the typed arrays held, old table included. */
  get bytes(): number {
    return 4 * (this.table.length + this.old.length);
  }

  /** The row of an id, or −1. */
  get(lo: number, hi: number): number {
    lo >>>= 0;
    hi >>>= 0;
    const table = this.table;
    const mask = this.mask;
    let i = indexHash(lo, hi) & mask;
    for (;;) {
      const w = 3 * i;
      const s = table[w + 2]!;
      if (s === 0) break;
      if (table[w] === lo && table[w + 1] === hi) return s - 1;
      i = (i + 1) & mask;
    }
    if (this.oldLeft === 0) return -1;
    const p = this.findOld(lo, hi);
    return p < 0 ? -1 : this.old[3 * p + 2]! - 1;
  }

  /**
   * Maps an id to `row` (an integer in [0, 2^31 − 2]) and answers the row it had, or −1 for a new
   * id. Throws `EMBEDDING_CAPACITY_EXHAUSTED` when the index would need more than 2^30 slots or its
   * growth cannot be allocated; the index is then unchanged. `reserve` first to rule that out.
   */
  insert(lo: number, hi: number, row: number): number {
    if (!Number.isInteger(row) || row < 0 || row > maxRow) {
      throw invalidArgument('row', row, 'must be an integer in [0, 2^31 - 2]');
    }
    lo >>>= 0;
    hi >>>= 0;
    const table = this.table;
    const mask = this.mask;
    let i = indexHash(lo, hi) & mask;
    for (;;) {
      const w = 3 * i;
      const s = table[w + 2]!;
      if (s === 0) break;
      if (table[w] === lo && table[w + 1] === hi) {
        table[w + 2] = row + 1;
        this.migrateSome();
        return s - 1;
      }
      i = (i + 1) & mask;
    }
    if (this.oldLeft > 0) {
      const p = this.findOld(lo, hi);
      if (p >= 0) {
        const previous = this.old[3 * p + 2]! - 1;
        this.old[3 * p + 2] = row + 1;
        this.migrateSome();
        return previous;
      }
    }
    if (this.entries + 1 > this.limit) {
      this.grow(this.capacity * 2);
      this.place(lo, hi, row + 1);
    } else {
      table[3 * i] = lo;
      table[3 * i + 1] = hi;
      table[3 * i + 2] = row + 1;
    }
    this.entries++;
    this.migrateSome();
    return -1;
  }

  /** Removes an id and answers the row it had, or −1 when it was not held. */
  delete(lo: number, hi: number): number {
    lo >>>= 0;
    hi >>>= 0;
    const table = this.table;
    const mask = this.mask;
    let i = indexHash(lo, hi) & mask;
    let row = -1;
    for (;;) {
      const w = 3 * i;
      const s = table[w + 2]!;
      if (s === 0) break;
      if (table[w] === lo && table[w + 1] === hi) {
        row = s - 1;
        this.shiftBack(i);
        break;
      }
      i = (i + 1) & mask;
    }
    if (row < 0 && this.oldLeft > 0) {
      const p = this.findOld(lo, hi);
      if (p >= 0) {
        row = this.old[3 * p + 2]! - 1;
        this.shiftBackOld(p);
        this.oldLeft--;
      }
    }
    if (row >= 0) this.entries--;
    this.migrateSome();
    return row;
  }

  /**
   * Makes room for `n` ids in all, so that inserts up to that size allocate nothing and cannot
   * fail. Answers false, changing nothing, when that needs more than 2^30 slots or the allocation
   * fails. Growing here is incremental like any growth, except that a migration still under way is
   * finished first.
   */
  reserve(n: number): boolean {
    if (!(n >= 0)) throw invalidArgument('n', n, 'must be a count ≥ 0');
    if (n <= this.limit) return true;
    const capacity = capacityFor(n);
    if (capacity > maxIdIndexCapacity) return false;
    let table: Uint32Array;
    try {
      table = new Uint32Array(3 * capacity);
    } catch (error) {
      if (error instanceof RangeError) return false;
      throw error;
    }
    this.migrateSome(Infinity);
    this.install(table);
    this.migrateSome();
    return true;
  }

  /**
   * Calls `visit` for every (lo, hi, row), in no particular order. The index must not change
   * during the walk.
   */
  forEach(visit: (lo: number, hi: number, row: number) => void): void {
    for (const table of this.oldLeft === 0 ? [this.table] : [this.table, this.old]) {
      for (let w = 0; w < table.length; w += 3) {
        const s = table[w + 2]!;
        if (s !== 0) visit(table[w]!, table[w + 1]!, s - 1);
      }
    }
  }

  /**
   * Looks up the ids of an int64 little-endian buffer (8 bytes per id, as `SparseGrad.ids` and
   * `GetRowsRequest.ids` carry them): `out[k]` gets the row of id k or −1. Answers how many were
   * found.
   */
  lookupMany(ids: Uint8Array, out: Int32Array): number {
    if (ids.length % 8 !== 0) {
      throw invalidArgument('ids', `${ids.length} bytes`, 'must be a multiple of 8 bytes long');
    }
    const n = ids.length >>> 3;
    if (out.length < n) {
      throw invalidArgument('out', `length ${out.length}`, `must hold ${n} rows`);
    }
    let found = 0;
    if (littleEndian && ids.byteOffset % 4 === 0) {
      const words = new Uint32Array(ids.buffer, ids.byteOffset, 2 * n);
      for (let k = 0; k < n; k++) {
        const row = this.get(words[2 * k]!, words[2 * k + 1]!);
        out[k] = row;
        if (row >= 0) found++;
      }
    } else {
      const view = new DataView(ids.buffer, ids.byteOffset, ids.length);
      for (let k = 0; k < n; k++) {
        const row = this.get(view.getUint32(8 * k, true), view.getUint32(8 * k + 4, true));
        out[k] = row;
        if (row >= 0) found++;
      }
    }
    return found;
  }

  /** Writes a new (absent) id into the current table. */
  private place(lo: number, hi: number, value: number): void {
    const table = this.table;
    const mask = this.mask;
    let i = indexHash(lo, hi) & mask;
    while (table[3 * i + 2] !== 0) i = (i + 1) & mask;
    table[3 * i] = lo;
    table[3 * i + 1] = hi;
    table[3 * i + 2] = value;
  }

  /** Doubles into a new table; the old one drains over the next operations. */
  private grow(capacity: number): void {
    if (capacity > maxIdIndexCapacity) {
      throw capacityExhausted('IdIndex', this.entries + 1, `the index is limited to 2^30 slots`);
    }
    let table: Uint32Array;
    try {
      table = new Uint32Array(3 * capacity);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      throw capacityExhausted('IdIndex', this.entries + 1, `allocating ${capacity} slots failed`);
    }
    // Only when growth outpaces the migration (migrateSlotsPerOp < 2, or deletes between growths).
    this.migrateSome(Infinity);
    this.install(table);
  }

  /** Makes the given (empty) array the current table and the current one the old. */
  private install(table: Uint32Array): void {
    if (this.entries > 0) {
      this.old = this.table;
      this.oldMask = this.mask;
      this.oldMigrated = 0;
      this.oldLeft = this.entries;
      let start = 0;
      while (this.old[3 * start + 2] !== 0) start++; // the load limit leaves empty slots
      this.oldStart = start;
    }
    this.table = table;
    this.mask = table.length / 3 - 1;
    this.limit = Math.floor((table.length / 3) * maxLoad);
  }

  /** Moves up to `budget` old positions into the current table. */
  private migrateSome(budget = this.migrateSlotsPerOp): void {
    if (this.oldLeft === 0) return;
    const old = this.old;
    const mask = this.oldMask;
    while (budget-- > 0 && this.oldLeft > 0) {
      const w = 3 * ((this.oldStart + this.oldMigrated) & mask);
      const s = old[w + 2]!;
      if (s !== 0) {
        this.place(old[w]!, old[w + 1]!, s);
        old[w + 2] = 0;
        this.oldLeft--;
      }
      this.oldMigrated++;
    }
    if (this.oldLeft === 0) {
      this.old = noSlots;
      this.oldMask = 0;
    }
  }

  /** Where an id's probe starts in the old table: its home, or the first unprocessed position. */
  private oldHome(lo: number, hi: number): number {
    const mask = this.oldMask;
    const home = indexHash(lo, hi) & mask;
    return ((home - this.oldStart) & mask) < this.oldMigrated
      ? (this.oldStart + this.oldMigrated) & mask
      : home;
  }

  private findOld(lo: number, hi: number): number {
    const old = this.old;
    const mask = this.oldMask;
    let i = this.oldHome(lo, hi);
    while (old[3 * i + 2] !== 0) {
      if (old[3 * i] === lo && old[3 * i + 1] === hi) return i;
      i = (i + 1) & mask;
    }
    return -1;
  }

  /**
   * Backward-shift deletion: empties position `hole` and pulls later entries of its run back over
   * it when their probe start allows, so that every entry stays reachable from its home.
   */
  private shiftBack(hole: number): void {
    const table = this.table;
    const mask = this.mask;
    for (let j = (hole + 1) & mask; table[3 * j + 2] !== 0; j = (j + 1) & mask) {
      const home = indexHash(table[3 * j]!, table[3 * j + 1]!) & mask;
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        moveSlot(table, j, hole);
        hole = j;
      }
    }
    table[3 * hole + 2] = 0;
  }

  /** `shiftBack` in the old table, where a probe may start at the first unprocessed position. */
  private shiftBackOld(hole: number): void {
    const old = this.old;
    const mask = this.oldMask;
    for (let j = (hole + 1) & mask; old[3 * j + 2] !== 0; j = (j + 1) & mask) {
      const home = this.oldHome(old[3 * j]!, old[3 * j + 1]!);
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        moveSlot(old, j, hole);
        hole = j;
      }
    }
    old[3 * hole + 2] = 0;
  }
}

/** Copies slot `from` over slot `to` (both positions of `table`). */
function moveSlot(table: Uint32Array, from: number, to: number): void {
  table[3 * to] = table[3 * from]!;
  table[3 * to + 1] = table[3 * from + 1]!;
  table[3 * to + 2] = table[3 * from + 2]!;
}

/** The smallest power-of-two capacity (≥ 8) that holds `n` entries within the load limit. */
export function capacityFor(n: number): number {
  let capacity = Math.max(8, nextPowerOfTwo(Math.ceil(n / maxLoad)));
  while (Math.floor(capacity * maxLoad) < n) capacity *= 2;
  return capacity;
}

function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
