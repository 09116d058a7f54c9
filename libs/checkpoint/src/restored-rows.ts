import type { TableRows__Output } from '@pserver/proto';
import { CheckpointError } from './errors';

/** The entry of an eviction: it has no row. */
const noRow = 0xffffffff;

/**
 * The rows of one table over every shard's chain, kept in memory, and what each file of a chain
 * evicted; `restored()` then gives the rows the chains restore, in id order. Applied as the
 * pserver restores a chain — in each file, its evictions remove ids, then its rows replace or add
 * theirs — so of an id's entries on a shard, ordered by file and an eviction before a row of the
 * same file, the last one decides: a row is restored, an eviction leaves none.
 *
 * Memory: 20 bytes an entry (id, shard, file, row), and per row its values (4 × stride bytes),
 * lastSeen and count (8 bytes); `restored` adds 8 bytes an entry (the order and its result), and
 * V8's comparator sort copies the order once more.
 */
export class RestoredRows {
  /** Ids, int64 LE: the low word (unsigned) at 2k, the high word (signed) at 2k + 1. */
  readonly ids: Buffer;
  private readonly low: Uint32Array;
  private readonly high: Int32Array;
  private readonly shardOf: Uint32Array;
  private readonly fileOf: Uint32Array;
  private readonly rowOf: Uint32Array;
  private entries = 0;
  /** Values and optimizer state, `stride` float32 LE a row, bit-exact. */
  values = Buffer.alloc(0);
  readonly lastSeen: Uint32Array;
  readonly counts: Uint32Array;
  stride = 0;
  private rows = 0;

  constructor(
    readonly table: string,
    private readonly rowCapacity: number,
    evictionCapacity: number,
  ) {
    const entries = rowCapacity + evictionCapacity;
    const words = new ArrayBuffer(8 * entries);
    this.ids = Buffer.from(words);
    this.low = new Uint32Array(words);
    this.high = new Int32Array(words);
    this.shardOf = new Uint32Array(entries);
    this.fileOf = new Uint32Array(entries);
    this.rowOf = new Uint32Array(entries);
    this.lastSeen = new Uint32Array(rowCapacity);
    this.counts = new Uint32Array(rowCapacity);
  }

  /** A row section of file `file` (0: the full checkpoint) of shard `shard`'s chain; copied. */
  addRows(section: TableRows__Output, shard: number, file: number): void {
    const n = section.ids.byteLength / 8;
    if (this.rows === 0 && this.stride === 0) {
      this.stride = section.stride;
      this.values = Buffer.alloc(this.rowCapacity * this.stride * 4);
    }
    if (section.stride !== this.stride)
      throw corrupt(
        `table ${this.table}: rows of stride ${section.stride} on shard ${shard}, ${this.stride} elsewhere`,
      );
    if (this.rows + n > this.rowCapacity)
      throw corrupt(`table ${this.table}: more rows than its records announced`);
    this.values.set(section.values, this.rows * this.stride * 4);
    copyWords(this.lastSeen, this.rows, section.lastSeen);
    copyWords(this.counts, this.rows, section.counts);
    const at = this.entries;
    this.ids.set(section.ids, 8 * at);
    this.shardOf.fill(shard, at, at + n);
    this.fileOf.fill(file, at, at + n);
    for (let k = 0; k < n; k++) this.rowOf[at + k] = this.rows + k;
    this.entries += n;
    this.rows += n;
  }

  /** Ids (int64 LE) file `file` of shard `shard`'s chain evicted since its parent; copied. */
  addEvictions(ids: Uint8Array, shard: number, file: number): void {
    const n = ids.byteLength / 8;
    const at = this.entries;
    if (at + n > this.shardOf.length)
      throw corrupt(`table ${this.table}: more evicted ids than its records announced`);
    this.ids.set(ids, 8 * at);
    this.shardOf.fill(shard, at, at + n);
    this.fileOf.fill(file, at, at + n);
    this.rowOf.fill(noRow, at, at + n);
    this.entries += n;
  }

  /**
   * The entries of the rows the chains restore, in ascending id order (as signed 64-bit
   * integers). Refuses an id with two rows in one file, or restored on two shards.
   */
  restored(): Uint32Array {
    const { low, high, shardOf, fileOf, rowOf } = this;
    const isRow = (e: number): number => (rowOf[e] === noRow ? 0 : 1);
    const order = new Uint32Array(this.entries);
    for (let e = 0; e < order.length; e++) order[e] = e;
    order.sort(
      (a, b) =>
        high[2 * a + 1]! - high[2 * b + 1]! ||
        low[2 * a]! - low[2 * b]! ||
        shardOf[a]! - shardOf[b]! ||
        fileOf[a]! - fileOf[b]! ||
        isRow(a) - isRow(b),
    );
    const sameId = (a: number, b: number): boolean =>
      low[2 * a] === low[2 * b] && high[2 * a + 1] === high[2 * b + 1];
    const kept = new Uint32Array(order.length);
    let count = 0;
    for (let k = 0; k < order.length;) {
      let end = k + 1;
      while (end < order.length && sameId(order[end]!, order[k]!)) end++;
      let survivor = -1;
      // The id's entries shard by shard: the last of each shard decides.
      for (let s = k; s < end;) {
        let t = s + 1;
        for (; t < end && shardOf[order[t]!] === shardOf[order[s]!]; t++) {
          const [a, b] = [order[t - 1]!, order[t]!];
          if (fileOf[a] === fileOf[b] && isRow(a) + isRow(b) === 2)
            throw corrupt(`table ${this.table}: id ${this.idOf(b)} has two rows in one file`);
        }
        const last = order[t - 1]!;
        if (isRow(last)) {
          if (survivor >= 0)
            throw corrupt(
              `table ${this.table}: id ${this.idOf(last)} has rows on shards ${shardOf[survivor]} and ${shardOf[last]}`,
            );
          survivor = last;
        }
        s = t;
      }
      if (survivor >= 0) kept[count++] = survivor;
      k = end;
    }
    return kept.subarray(0, count);
  }

  shard(entry: number): number {
    return this.shardOf[entry]!;
  }

  row(entry: number): number {
    return this.rowOf[entry]!;
  }

  idOf(entry: number): bigint {
    return this.ids.readBigInt64LE(8 * entry);
  }
}

function copyWords(target: Uint32Array, at: number, bytes: Uint8Array): void {
  new Uint8Array(target.buffer, 4 * at, bytes.byteLength).set(bytes);
}

function corrupt(message: string): CheckpointError {
  return new CheckpointError('CHECKPOINT_CORRUPT', message);
}
