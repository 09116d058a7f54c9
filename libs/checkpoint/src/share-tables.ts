import { bucketsOfIds, checkTableBuckets } from '@pserver/proto';
import type {
  TableEvictions__Output,
  TableRecord__Output,
  TableRows__Output,
} from '@pserver/proto';
import { IdIndex } from '@pserver/embedding';
import { CheckpointError } from './errors';

/**
 * Rows as parallel columns, as in `TableRows`: ids int64, values `stride` float32, lastSeen and
 * counts uint32, all little-endian.
 */
export interface ShareRows {
  ids: Uint8Array;
  values: Uint8Array;
  lastSeen: Uint8Array;
  counts: Uint8Array;
}

/** A table's part of a share. */
export interface ShareTable {
  /** The chain's last record of the table: spec, step, pending admissions (all of them). */
  record: TableRecord__Output;
  /** float32 values a row, as the rows kept say; 0 when none was kept. */
  stride: number;
  /** The wanted buckets' rows, in ascending bucket order. */
  rows: ShareRows;
}

/**
 * Follows the table frames of a chain, file by file, as restoring does (a file's evictions remove
 * ids, then its rows replace or add theirs; a table a file does not mention stays as it was; a
 * table seen first in a delta starts empty), keeping only the rows of the wanted buckets. Both
 * ways of reading a share (through the index, or every frame) feed it the same frames of the
 * wanted buckets in the same order, so they give the same result.
 */
export class ShareTables {
  private readonly tables = new Map<string, TableState>();
  private current: TableState | undefined;
  private readonly inFile = new Set<string>();
  private file = '';

  constructor(private readonly wanted: (table: string, bucket: number) => boolean) {}

  /** The next file's frames follow (`file`: its path, for messages). */
  startFile(file: string): void {
    this.file = file;
    this.inFile.clear();
    this.current = undefined;
  }

  table(record: TableRecord__Output): void {
    const name = record.spec?.name ?? '';
    const buckets = record.spec?.buckets ?? 0;
    try {
      checkTableBuckets(buckets, `table ${name}`);
    } catch (err) {
      throw this.corrupt(`table ${name}: ${buckets} buckets`, err);
    }
    if (this.inFile.has(name)) throw this.corrupt(`table ${name} appears twice`);
    this.inFile.add(name);
    const known = this.tables.get(name);
    if (known && known.buckets !== buckets)
      throw this.corrupt(`table ${name} has ${buckets} buckets, an earlier file ${known.buckets}`);
    const state = known ?? new TableState(name, buckets, this.wanted);
    state.record = record;
    this.tables.set(name, state);
    this.current = state;
  }

  /** Whether a row section of `table` holding buckets `first..last` may hold a wanted row. */
  wantsAny(table: string, first: number, last: number): boolean {
    return this.expect(table).wantsAny(first, last);
  }

  evictions(evictions: TableEvictions__Output): void {
    const state = this.expect(evictions.table);
    if (evictions.ids.byteLength % 8 !== 0)
      throw this.corrupt(
        `evictions of table ${evictions.table}: ${evictions.ids.byteLength} bytes of ids`,
      );
    state.rows.evict(evictions.ids);
  }

  rows(rows: TableRows__Output): void {
    const state = this.expect(rows.table);
    const n = rows.ids.byteLength / 8;
    if (
      !Number.isInteger(n) ||
      rows.values.byteLength !== n * rows.stride * 4 ||
      rows.lastSeen.byteLength !== n * 4 ||
      rows.counts.byteLength !== n * 4
    )
      throw this.corrupt(`rows of table ${rows.table}: columns of unequal length`);
    const of = bucketsOfIds(rows.ids, state.buckets);
    // Rows are in bucket order: the wanted ones come in runs, each put at once.
    for (let k = 0; k < n;) {
      if (!state.wanted(of[k]!)) {
        k++;
        continue;
      }
      let end = k + 1;
      while (end < n && state.wanted(of[end]!)) end++;
      if (state.rows.stride !== 0 && state.rows.stride !== rows.stride)
        throw this.corrupt(
          `rows of table ${rows.table} with stride ${rows.stride}, earlier ones ${state.rows.stride}`,
        );
      state.rows.put(rows, k, end, of);
      k = end;
    }
  }

  /** Every table of the chain, in the order the chain first names them. */
  result(): ShareTable[] {
    return [...this.tables.values()].map((state) => ({
      record: state.record!,
      stride: state.rows.stride,
      rows: state.rows.columns(state.buckets),
    }));
  }

  private expect(table: string): TableState {
    if (!this.current || this.current.name !== table)
      throw this.corrupt(`frames of table ${table} without its table record before them`);
    return this.current;
  }

  private corrupt(what: string, cause?: unknown): CheckpointError {
    return new CheckpointError('CHECKPOINT_CORRUPT', `checkpoint ${this.file}: ${what}`, {
      cause,
    });
  }
}

class TableState {
  record: TableRecord__Output | undefined;
  readonly rows = new RowSet();
  /** Per bucket: 0 not asked yet, 1 wanted, 2 not; the filter is asked once per bucket met. */
  private readonly mask: Uint8Array;

  constructor(
    readonly name: string,
    readonly buckets: number,
    private readonly filter: (table: string, bucket: number) => boolean,
  ) {
    this.mask = new Uint8Array(buckets);
  }

  wanted(bucket: number): boolean {
    if (this.mask[bucket] === 0) this.mask[bucket] = this.filter(this.name, bucket) ? 1 : 2;
    return this.mask[bucket] === 1;
  }

  wantsAny(first: number, last: number): boolean {
    for (let b = first; b <= Math.min(last, this.buckets - 1); b++) if (this.wanted(b)) return true;
    return false;
  }
}

/**
 * Rows by id, each copied once into growing columns (a slot per id: a replaced row is written over
 * its slot, an evicted one leaves its slot dead), so kept rows do not hold the frames they came in
 * alive. Ids are found through an `IdIndex` (typed arrays, no BigInt), and rows bound for
 * consecutive slots (a full file's, whose ids are all new) are copied a stretch at a time.
 */
class RowSet {
  stride = 0;
  private readonly index = new IdIndex();
  private used = 0;
  private capacity = 0;
  private ids = new Uint8Array(0);
  private values = new Uint8Array(0);
  private lastSeen = new Uint8Array(0);
  private counts = new Uint8Array(0);
  private buckets = new Uint32Array(0);
  private alive = new Uint8Array(0);

  evict(ids: Uint8Array): void {
    const words = idWords(ids);
    for (let k = 0; 2 * k < words.length; k++) {
      const slot = this.index.delete(words[2 * k]!, words[2 * k + 1]!);
      if (slot >= 0) this.alive[slot] = 0;
    }
  }

  /** Rows `from..to - 1` of `rows` (`of`: their buckets) replace their ids' rows or are added. */
  put(rows: TableRows__Output, from: number, to: number, of: Uint32Array): void {
    this.stride = rows.stride;
    this.reserve(this.used + (to - from));
    const words = idWords(rows.ids.subarray(8 * from, 8 * to));
    const slots = new Int32Array(to - from);
    for (let k = 0; k < slots.length; k++) {
      const lo = words[2 * k]!;
      const hi = words[2 * k + 1]!;
      let slot = this.index.get(lo, hi);
      if (slot < 0) {
        slot = this.used++;
        this.index.insert(lo, hi, slot);
      }
      slots[k] = slot;
      this.buckets[slot] = of[from + k]!;
      this.alive[slot] = 1;
    }
    const width = 4 * this.stride;
    forStretches(slots, (start, end, slot) => {
      const k = from + start;
      const n = end - start;
      this.ids.set(rows.ids.subarray(8 * k, 8 * (k + n)), 8 * slot);
      this.values.set(rows.values.subarray(width * k, width * (k + n)), width * slot);
      this.lastSeen.set(rows.lastSeen.subarray(4 * k, 4 * (k + n)), 4 * slot);
      this.counts.set(rows.counts.subarray(4 * k, 4 * (k + n)), 4 * slot);
    });
  }

  /** The rows held, in ascending bucket order (a counting sort), by slot within a bucket. */
  columns(buckets: number): ShareRows {
    const starts = new Uint32Array(buckets + 1);
    let live = 0;
    for (let slot = 0; slot < this.used; slot++)
      if (this.alive[slot] === 1) {
        starts[this.buckets[slot]! + 1]!++;
        live++;
      }
    for (let b = 0; b < buckets; b++) starts[b + 1]! += starts[b]!;
    const order = new Int32Array(live);
    for (let slot = 0; slot < this.used; slot++)
      if (this.alive[slot] === 1) order[starts[this.buckets[slot]!]!++] = slot;
    const width = 4 * this.stride;
    const out = {
      ids: new Uint8Array(8 * live),
      values: new Uint8Array(width * live),
      lastSeen: new Uint8Array(4 * live),
      counts: new Uint8Array(4 * live),
    };
    // Slots already in bucket order (a full file's rows) are copied a stretch at a time.
    forStretches(order, (start, end, slot) => {
      const n = end - start;
      out.ids.set(this.ids.subarray(8 * slot, 8 * (slot + n)), 8 * start);
      out.values.set(this.values.subarray(width * slot, width * (slot + n)), width * start);
      out.lastSeen.set(this.lastSeen.subarray(4 * slot, 4 * (slot + n)), 4 * start);
      out.counts.set(this.counts.subarray(4 * slot, 4 * (slot + n)), 4 * start);
    });
    return out;
  }

  private reserve(slots: number): void {
    if (slots <= this.capacity) return;
    const capacity = Math.max(1024, 2 * this.capacity, slots);
    const widen = <T extends Uint8Array | Uint32Array>(
      old: T,
      make: (n: number) => T,
      per: number,
    ): T => {
      const next = make(per * capacity);
      next.set(old);
      return next;
    };
    const bytes = (n: number) => new Uint8Array(n);
    this.ids = widen(this.ids, bytes, 8);
    this.values = widen(this.values, bytes, 4 * this.stride);
    this.lastSeen = widen(this.lastSeen, bytes, 4);
    this.counts = widen(this.counts, bytes, 4);
    this.alive = widen(this.alive, bytes, 1);
    this.buckets = widen(this.buckets, (n) => new Uint32Array(n), 1);
    this.capacity = capacity;
  }
}

/** Calls `copy(start, end, slots[start])` for each stretch of `slots` that runs up by one. */
function forStretches(
  slots: Int32Array,
  copy: (start: number, end: number, slot: number) => void,
): void {
  for (let start = 0; start < slots.length;) {
    let end = start + 1;
    while (end < slots.length && slots[end] === slots[end - 1]! + 1) end++;
    copy(start, end, slots[start]!);
    start = end;
  }
}

/**
 * An id column as uint32 pairs (copied when the bytes are not 4-aligned): the index's key. The
 * same pairs key every lookup, whatever the host's byte order.
 */
function idWords(ids: Uint8Array): Uint32Array {
  if (ids.byteOffset % 4 === 0)
    return new Uint32Array(ids.buffer, ids.byteOffset, ids.byteLength / 4);
  return new Uint32Array(Uint8Array.from(ids).buffer);
}
