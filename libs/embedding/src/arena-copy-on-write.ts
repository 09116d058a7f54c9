import type { RowArena, RowChunk } from './row-arena';

// A copy-on-write snapshot of a `RowArena`: the chunks it copies, and the rows pushes keep first.

/** A snapshot's copy-on-write of an arena's rows (`RowArena.copyOnWrite`). */
export interface ChunkCopies {
  /** The chunks the arena had when the snapshot began: the ones it copies. */
  readonly chunks: number;
  /** Copies chunk `c` now unless it was copied already: true when it copied. */
  copyNow(c: number): boolean;
  /**
   * Puts the rows kept before their first write back into `copies` (one per chunk, each copied
   * after those writes): the copies then hold every row as it was when the snapshot began.
   */
  restoreKept(copies: readonly RowChunk[]): void;
  /** No write keeps or copies anything for this snapshot any more. */
  drop(): void;
}

/** Rows kept per block of a snapshot's kept rows. */
const keptRowsPerBlock = 1024;

/** A block of rows kept for a snapshot: their numbers and their bytes, column by column. */
interface KeptBlock extends RowChunk {
  readonly rows: Int32Array;
  length: number;
}

/** Row `i` of `from` over row `j` of `to`: values and metadata (an element loop: no view). */
function copyRow(from: RowChunk, i: number, to: RowChunk, j: number, stride: number): void {
  for (let e = 0; e < stride; e++) to.values[j * stride + e] = from.values[i * stride + e]!;
  to.idLo[j] = from.idLo[i]!;
  to.idHi[j] = from.idHi[i]!;
  to.lastSeen[j] = from.lastSeen[i]!;
  to.count[j] = from.count[i]!;
  to.flags[j] = from.flags[i]!;
}

/** The state of a copy-on-write snapshot of an arena (`RowArena.copyOnWrite`). */
export class PendingCopy {
  readonly chunks: number;
  private readonly copied: Uint8Array;
  /** One bit per row of the copied chunks: its bytes were kept before its first write. */
  private readonly kept: Uint32Array;
  private readonly blocks: KeptBlock[] = [];

  constructor(
    private readonly arena: RowArena,
    private readonly copy: (c: number) => void,
    private readonly take: (bytes: number) => Uint8Array,
  ) {
    this.chunks = arena.chunkCount;
    this.copied = new Uint8Array(this.chunks);
    this.kept = new Uint32Array(Math.ceil((this.chunks * arena.rowsPerChunk) / 32));
  }

  copyChunk(c: number): boolean {
    if (c >= this.chunks || this.copied[c] === 1) return false;
    this.copied[c] = 1;
    this.copy(c);
    return true;
  }

  /** Keeps `row`'s bytes (it lives in `chunk`) unless its chunk was copied or it was kept. */
  keepRow(row: number, chunk: RowChunk): void {
    const c = row >>> this.arena.shift;
    if (c >= this.chunks || this.copied[c] === 1) return;
    const bit = 1 << (row & 31);
    if ((this.kept[row >>> 5]! & bit) !== 0) return;
    this.kept[row >>> 5] = this.kept[row >>> 5]! | bit;
    let block = this.blocks[this.blocks.length - 1];
    if (!block || block.length === keptRowsPerBlock) this.blocks.push((block = this.newBlock()));
    const k = block.length++;
    block.rows[k] = row;
    copyRow(chunk, row & this.arena.mask, block, k, this.arena.stride);
  }

  restoreKept(copies: readonly RowChunk[]): void {
    const { shift, mask, stride } = this.arena;
    for (const block of this.blocks)
      for (let k = 0; k < block.length; k++) {
        const row = block.rows[k]!;
        copyRow(block, k, copies[row >>> shift]!, row & mask, stride);
      }
  }

  private newBlock(): KeptBlock {
    const n = keptRowsPerBlock;
    const u32 = (): Uint32Array => {
      const bytes = this.take(4 * n);
      return new Uint32Array(bytes.buffer, bytes.byteOffset, n);
    };
    const values = this.take(4 * n * this.arena.stride);
    const rows = this.take(4 * n);
    return {
      rows: new Int32Array(rows.buffer, rows.byteOffset, n),
      values: new Float32Array(values.buffer, values.byteOffset, n * this.arena.stride),
      idLo: u32(),
      idHi: u32(),
      lastSeen: u32(),
      count: u32(),
      flags: this.take(n),
      length: 0,
    };
  }
}
