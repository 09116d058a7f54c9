import { PendingCopy, type ChunkCopies } from './arena-copy-on-write';
import { capacityExhausted, invalidArgument } from './errors';

/** Options of a `RowArena`. */
export interface RowArenaOptions {
  /** float32 values per row: dim plus the optimizer's per-row state (plus padding, if wanted). */
  stride: number;
  /** Rows per chunk, a power of two. */
  rowsPerChunk?: number;
  /** Most rows the arena may back (allocated or free). */
  maxRows?: number;
  /** Most bytes the arena may hold (values, metadata and the free list). */
  maxBytes?: number;
  /** What every value of a new chunk is filled with before use. */
  fill?: number;
}

export const defaultRowArenaOptions = {
  rowsPerChunk: 4096,
  maxRows: 2 ** 31 - 2,
  maxBytes: Number.POSITIVE_INFINITY,
  fill: 0,
};

/** `flags` bits. */
export const rowFlags = {
  /** The row is allocated (not on the free list). */
  live: 1,
  /** Written since the last checkpoint took it. */
  dirty: 2,
} as const;

const maxCount = 0xffffffff;
const dirtyAndLive = rowFlags.live | rowFlags.dirty;
/** Metadata bytes per row: idLo, idHi, lastSeen, count (4 each) and flags (1). */
const metadataBytesPerRow = 17;

/**
 * One chunk: `rowsPerChunk` rows of values and the rows' metadata, all indexed by `row & mask`
 * (values at `(row & mask) * stride`). Sweeps and checkpoints walk these arrays directly.
 */
export interface RowChunk {
  readonly values: Float32Array;
  /** The id of each row, low and high 32 bits: the reverse of the `IdIndex`. */
  readonly idLo: Uint32Array;
  readonly idHi: Uint32Array;
  /** The table step of the row's last push. */
  readonly lastSeen: Uint32Array;
  /** Occurrences pushed, saturating at 2^32 − 1. */
  readonly count: Uint32Array;
  /** `rowFlags` bits. */
  readonly flags: Uint8Array;
}

/**
 * The rows of a sparse table: `stride` float32 values each, in chunks of `rowsPerChunk` rows, with
 * per-row metadata in parallel typed arrays. Row r lives in chunk `r >>> shift` at offset
 * `(r & mask) * stride`.
 *
 * Chunks are added as rows are needed and never returned; each is filled when it is allocated,
 * because a fresh typed array's pages are mapped on first touch and that first touch, scattered
 * over random pushes, made updates about 3× slower. Freed rows go on a free list (a stack) and are
 * handed out again before any new row.
 */
export class RowArena {
  readonly stride: number;
  readonly rowsPerChunk: number;
  /** `row >>> shift` is the row's chunk. */
  readonly shift: number;
  /** `row & mask` is the row's index within its chunk. */
  readonly mask: number;
  readonly maxRows: number;
  readonly maxBytes: number;
  private readonly fill: number;

  private readonly chunks: RowChunk[] = [];
  /** Rows handed out at least once: rows below it are live or on the free list. */
  private highWater = 0;
  private freeRows: Int32Array = new Int32Array(0);
  private freeCount = 0;
  private dirtyCount = 0;
  /**
   * Every row whose dirty bit `touch` set since the dirty bits were last cleared, in order: a
   * delta finds its rows here rather than in the whole arena. A row may be listed twice (freed
   * and pushed again) or be clean or free by now; the flags decide. Undefined once more than a
   * quarter of the rows were listed (a replica, which never checkpoints, or a table mostly
   * pushed): the bits are then found by a pass over every row, and the log costs at most a byte
   * a row.
   */
  private dirtyLog: Int32Array | undefined = new Int32Array(1024);
  private dirtyLogLength = 0;
  /** A snapshot taken copy-on-write, while one is under way (`copyOnWrite`). */
  private beforeWrite: PendingCopy | undefined;

  constructor(options: RowArenaOptions) {
    const { stride, rowsPerChunk, maxRows, maxBytes, fill } = {
      ...defaultRowArenaOptions,
      ...options,
    };
    if (!Number.isInteger(stride) || stride < 1) {
      throw invalidArgument('stride', stride, 'must be an integer ≥ 1');
    }
    if (!Number.isInteger(rowsPerChunk) || rowsPerChunk < 1 || rowsPerChunk > 2 ** 30) {
      throw invalidArgument('rowsPerChunk', rowsPerChunk, 'must be a power of two');
    }
    if ((rowsPerChunk & (rowsPerChunk - 1)) !== 0) {
      throw invalidArgument('rowsPerChunk', rowsPerChunk, 'must be a power of two');
    }
    if (!Number.isInteger(maxRows) || maxRows < 0 || maxRows > defaultRowArenaOptions.maxRows) {
      throw invalidArgument('maxRows', maxRows, 'must be an integer in [0, 2^31 - 2]');
    }
    if (!(maxBytes >= 0)) throw invalidArgument('maxBytes', maxBytes, 'must be ≥ 0');
    this.stride = stride;
    this.rowsPerChunk = rowsPerChunk;
    this.shift = Math.log2(rowsPerChunk);
    this.mask = rowsPerChunk - 1;
    this.maxRows = maxRows;
    this.maxBytes = maxBytes;
    this.fill = fill;
  }

  /** Live (allocated, not freed) rows. */
  get rows(): number {
    return this.highWater - this.freeCount;
  }

  /** Live rows with the dirty bit set: pushed since a checkpoint last took them. */
  get dirtyRows(): number {
    return this.dirtyCount;
  }

  /**
   * The live rows with the dirty bit set, each once, in the order they were first pushed since
   * the bits were last cleared, and their bits cleared: the rows a delta takes. The bits are
   * cleared in place, without a copy-on-write snapshot's copy (a snapshot does not read them).
   */
  takeDirty(): Int32Array {
    const rows = new Int32Array(this.dirtyCount);
    let n = 0;
    this.eachListedRow((flags, i, row) => {
      if ((flags[i]! & dirtyAndLive) !== dirtyAndLive) return;
      flags[i] = flags[i]! & ~rowFlags.dirty;
      rows[n++] = row;
    });
    this.restartDirtyLog();
    return rows.subarray(0, n);
  }

  /** Clears every row's dirty bit (a full checkpoint took them all), as `takeDirty` does. */
  clearDirty(): void {
    this.eachListedRow((flags, i) => (flags[i] = flags[i]! & ~rowFlags.dirty));
    this.restartDirtyLog();
  }

  /** Each row the dirty log lists, or every row once the log was given up: its flags and index. */
  private eachListedRow(visit: (flags: Uint8Array, i: number, row: number) => void): void {
    const log = this.dirtyLog;
    if (log)
      for (let k = 0; k < this.dirtyLogLength; k++) {
        const row = log[k]!;
        visit(this.chunks[row >>> this.shift]!.flags, row & this.mask, row);
      }
    else
      this.chunks.forEach(({ flags }, c) => {
        for (let i = 0; i < flags.length; i++) visit(flags, i, (c << this.shift) | i);
      });
  }

  private restartDirtyLog(): void {
    this.dirtyCount = 0;
    this.dirtyLogLength = 0;
    this.dirtyLog ??= new Int32Array(1024);
  }

  /** Rows the chunks allocated so far can hold. */
  get capacity(): number {
    return this.chunks.length * this.rowsPerChunk;
  }

  get chunkCount(): number {
    return this.chunks.length;
  }

  /** Bytes of the typed arrays held: values, metadata and the free list (what `maxBytes` bounds). */
  get bytes(): number {
    return this.chunks.length * this.chunkBytes() + this.freeRows.byteLength;
  }

  /**
   * Makes sure the next `n` calls of `allocate` succeed without allocating. Answers false, changing
   * nothing, when that would pass `maxRows` or `maxBytes` or the memory cannot be allocated: a
   * push reserves all its new rows before it changes anything.
   */
  reserve(n: number): boolean {
    if (!Number.isInteger(n) || n < 0) throw invalidArgument('n', n, 'must be an integer ≥ 0');
    const highWater = this.highWater + Math.max(0, n - this.freeCount);
    if (highWater > this.maxRows) return false;
    if (highWater <= this.capacity) return true;
    const chunks = Math.ceil((highWater - this.capacity) / this.rowsPerChunk);
    const capacity = this.capacity + chunks * this.rowsPerChunk;
    // The free list is sized with the chunks, so that `free` never allocates (eviction cannot fail).
    const freeListLength = Math.max(this.freeRows.length, nextPowerOfTwo(capacity));
    const bytes = (this.chunks.length + chunks) * this.chunkBytes() + 4 * freeListLength;
    if (bytes > this.maxBytes) return false;
    const added: RowChunk[] = [];
    let freeRows = this.freeRows;
    try {
      for (let c = 0; c < chunks; c++) added.push(this.newChunk());
      if (freeListLength > freeRows.length) freeRows = new Int32Array(freeListLength);
    } catch (error) {
      if (error instanceof RangeError) return false;
      throw error;
    }
    if (freeRows !== this.freeRows) {
      freeRows.set(this.freeRows.subarray(0, this.freeCount));
      this.freeRows = freeRows;
    }
    this.chunks.push(...added);
    return true;
  }

  /**
   * A row for a new id: the last freed one, else a new one. Its metadata is reset and marked live;
   * its values are the fill of a new chunk or whatever the freed row held, so the caller writes the
   * initial value. Throws `EMBEDDING_CAPACITY_EXHAUSTED` when the arena cannot grow.
   */
  allocate(): number {
    let row: number;
    if (this.freeCount > 0) {
      row = this.freeRows[--this.freeCount]!;
    } else {
      const room = this.highWater < this.capacity && this.highWater < this.maxRows;
      if (!room && !this.reserve(1)) {
        throw capacityExhausted(
          'RowArena',
          this.rows + 1,
          `the arena is limited to ${this.maxRows} rows and ${this.maxBytes} bytes`,
        );
      }
      row = this.highWater++;
    }
    const chunk = this.chunkToWrite(row);
    const i = row & this.mask;
    chunk.idLo[i] = 0;
    chunk.idHi[i] = 0;
    chunk.lastSeen[i] = 0;
    chunk.count[i] = 0;
    chunk.flags[i] = rowFlags.live;
    return row;
  }

  /** Returns a live row to the free list. Never allocates. */
  free(row: number): void {
    const chunk = this.liveChunk(row);
    this.writingRow(row);
    if ((chunk.flags[row & this.mask]! & rowFlags.dirty) !== 0) this.dirtyCount--;
    chunk.flags[row & this.mask] = 0;
    this.freeRows[this.freeCount++] = row;
  }

  /** True when `row` is allocated and not freed. */
  isLive(row: number): boolean {
    if (!Number.isInteger(row) || row < 0 || row >= this.highWater) return false;
    return (this.chunks[row >>> this.shift]!.flags[row & this.mask]! & rowFlags.live) !== 0;
  }

  /** The row's values, to read or write: a view into its chunk, not a copy. */
  view(row: number): Float32Array {
    const chunk = this.liveChunk(row);
    this.writingRow(row);
    const offset = (row & this.mask) * this.stride;
    return chunk.values.subarray(offset, offset + this.stride);
  }

  /** Chunk `c` (`row >>> shift`), to read, in loops that avoid a `view` per row. */
  chunk(c: number): RowChunk {
    const chunk = this.chunks[c];
    if (chunk === undefined) throw invalidArgument('chunk', c, `must be below ${this.chunkCount}`);
    return chunk;
  }

  /** The chunk of `row`, to write that row: a snapshot under way keeps the row's bytes first. */
  chunkToWrite(row: number): RowChunk {
    const chunk = this.chunk(row >>> this.shift);
    this.writingRow(row);
    return chunk;
  }

  /** Chunk `c`, to write any of its rows: a snapshot under way copies it whole first. */
  writableChunk(c: number): RowChunk {
    const chunk = this.chunk(c);
    this.beforeWrite?.copyChunk(c);
    return chunk;
  }

  /**
   * Keeps the rows as they are now for a snapshot taken copy-on-write, until `drop`: each chunk
   * that exists now is handed to `copyChunk` once (`copyNow`, or a write to the whole chunk),
   * and just before the first write to a row whose chunk was not copied yet, the row's bytes are
   * kept (in buffers from `take`), to be put back into the copies (`restoreKept`). A push thus
   * keeps the few rows it changes, not their chunks. Rows in chunks added later did not exist
   * when the snapshot began. One snapshot at a time.
   */
  copyOnWrite(copyChunk: (c: number) => void, take: (bytes: number) => Uint8Array): ChunkCopies {
    if (this.beforeWrite)
      throw new Error("the arena's rows: a snapshot's copy-on-write is already pending");
    const pending = new PendingCopy(this, copyChunk, take);
    this.beforeWrite = pending;
    return {
      chunks: pending.chunks,
      copyNow: (c) => this.beforeWrite === pending && pending.copyChunk(c),
      restoreKept: (copies) => pending.restoreKept(copies),
      drop: () => {
        if (this.beforeWrite === pending) this.beforeWrite = undefined;
      },
    };
  }

  private writingRow(row: number): void {
    this.beforeWrite?.keepRow(row, this.chunks[row >>> this.shift]!);
  }

  /** Where the row's values start in `chunk(row >>> shift).values`. */
  offset(row: number): number {
    return (row & this.mask) * this.stride;
  }

  /** Records the id a row holds (the reverse map). */
  setId(row: number, lo: number, hi: number): void {
    const chunk = this.liveChunk(row);
    this.writingRow(row);
    chunk.idLo[row & this.mask] = lo;
    chunk.idHi[row & this.mask] = hi;
  }

  /** A push of `occurrences` at table step `step`: sets lastSeen, adds to count, marks dirty. */
  touch(row: number, step: number, occurrences = 1): void {
    const chunk = this.liveChunk(row);
    this.writingRow(row);
    const i = row & this.mask;
    chunk.lastSeen[i] = step;
    chunk.count[i] = Math.min(chunk.count[i]! + occurrences, maxCount);
    if ((chunk.flags[i]! & rowFlags.dirty) !== 0) return;
    chunk.flags[i]! |= rowFlags.dirty;
    this.dirtyCount++;
    if (!this.dirtyLog) return;
    if (this.dirtyLogLength === this.dirtyLog.length) this.growDirtyLog();
    if (this.dirtyLog) this.dirtyLog[this.dirtyLogLength++] = row;
  }

  /**
   * Room for one more row in the dirty log: the same length compacted, when most of it is rows
   * that are clean or free by now (rows evicted and pushed again), else twice the length, unless
   * that would list more than a quarter of the rows (the log is then given up).
   */
  private growDirtyLog(): void {
    const log = this.dirtyLog!;
    if (this.dirtyLogLength > 2 * this.dirtyCount) {
      const rows = this.takeDirty();
      for (const row of rows)
        this.chunks[row >>> this.shift]!.flags[row & this.mask]! |= rowFlags.dirty;
      log.set(rows);
      this.dirtyLogLength = rows.length;
      this.dirtyCount = rows.length;
      return;
    }
    if (2 * log.length > Math.max(1024, this.rows / 4)) {
      this.dirtyLog = undefined;
      return;
    }
    const grown = new Int32Array(2 * log.length);
    grown.set(log);
    this.dirtyLog = grown;
  }

  private liveChunk(row: number): RowChunk {
    if (!this.isLive(row)) throw invalidArgument('row', row, 'must be a live row of the arena');
    return this.chunks[row >>> this.shift]!;
  }

  private newChunk(): RowChunk {
    const n = this.rowsPerChunk;
    const chunk: RowChunk = {
      values: new Float32Array(n * this.stride).fill(this.fill),
      idLo: new Uint32Array(n).fill(0),
      idHi: new Uint32Array(n).fill(0),
      lastSeen: new Uint32Array(n).fill(0),
      count: new Uint32Array(n).fill(0),
      flags: new Uint8Array(n).fill(0),
    };
    return chunk;
  }

  private chunkBytes(): number {
    return this.rowsPerChunk * (4 * this.stride + metadataBytesPerRow);
  }
}

function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
