import fs from 'node:fs';
import type { TableRecord__Output, TableRows__Output } from '@pserver/proto';
import type { RestoredIds } from './restored-tables';

/** A tensor of the output: where it goes and how big it is. */
export interface OutputTensor {
  name: string;
  dtype: string;
  shape: number[];
  bytes: number;
  /** From the start of the data, set when the output is laid out. */
  offset: number;
}

interface MergedTable {
  name: string;
  dim: number;
  buckets: number;
  /** Each shard's restored ids, from pass 1, then all of them sorted. */
  sections: BigInt64Array[];
  sorted: BigInt64Array;
  ids: OutputTensor;
  values: OutputTensor;
}

/**
 * A job's sparse tables as two tensors each, `<table>.ids` (I64, [rows]) and `<table>.values`
 * (F32, [rows, dim]: the values without the optimizer's state), the rows of every shard merged
 * and sorted by id so that the same checkpoints always give the same bytes. Of a delta's chain
 * only the restored state is exported. Pass 1 keeps the ids only (8 bytes a row, and a shard's
 * `RestoredIds`); pass 2 puts the rows each file still holds at their places in the output.
 */
export class TableExport {
  private readonly tables = new Map<string, MergedTable>();

  /** Pass 1: a table record of one file of a shard's chain. */
  table(file: string, record: TableRecord__Output): void {
    const { name, dim, buckets } = record.spec!;
    const seen = this.tables.get(name);
    if (seen && (seen.dim !== dim || seen.buckets !== buckets)) {
      throw new Error(
        `${file}: table ${name} has dim ${dim} and ${buckets} buckets, another file's ${seen.dim} and ${seen.buckets}`,
      );
    }
    if (!seen) {
      const tensor = (suffix: string, dtype: string): OutputTensor => ({
        name: `${name}.${suffix}`,
        dtype,
        shape: [],
        bytes: 0,
        offset: 0,
      });
      this.tables.set(name, {
        name,
        dim,
        buckets,
        sections: [],
        sorted: new BigInt64Array(0),
        ids: tensor('ids', 'I64'),
        values: tensor('values', 'F32'),
      });
    }
  }

  /** After pass 1 over a shard's chain: the ids it restores (its `RestoredTables`). */
  shard(restored: Map<string, RestoredIds>): void {
    for (const [name, ids] of restored) this.tables.get(name)!.sections.push(ids.ids);
  }

  /** After pass 1: sorts each table's ids and returns its two tensors, to be laid out. */
  tensors(): OutputTensor[] {
    const out: OutputTensor[] = [];
    for (const table of this.tables.values()) {
      const total = table.sections.reduce((n, s) => n + s.length, 0);
      const sorted = new BigInt64Array(total);
      let at = 0;
      for (const section of table.sections) {
        sorted.set(section, at);
        at += section.length;
      }
      sorted.sort();
      for (let i = 1; i < sorted.length; i++) {
        if (sorted[i] === sorted[i - 1])
          throw new Error(
            `table ${table.name}: id ${sorted[i]} has a row in two shards' checkpoints`,
          );
      }
      table.sections = [];
      table.sorted = sorted;
      table.ids.shape = [total];
      table.ids.bytes = total * 8;
      table.values.shape = [total, table.dim];
      table.values.bytes = total * table.dim * 4;
      out.push(table.ids, table.values);
    }
    return out;
  }

  /** Pass 2: writes every table's sorted ids. */
  writeIds(fd: number, dataStart: number): void {
    for (const table of this.tables.values()) {
      const bytes = Buffer.from(table.sorted.buffer, table.sorted.byteOffset, table.ids.bytes);
      writeFully(fd, bytes, dataStart + table.ids.offset);
    }
  }

  /**
   * Pass 2: writes the rows of a section of file `fileIndex` of a shard's chain that the shard's
   * restored state holds (`restored`: a later delta may have replaced or evicted them), each
   * where its id sorts, the first `dim` floats of each (the rest is the optimizer's state). Rows
   * that land next to each other are written together.
   */
  writeRows(
    fd: number,
    dataStart: number,
    rows: TableRows__Output,
    restored: RestoredIds,
    fileIndex: number,
  ): void {
    const table = this.tables.get(rows.table)!;
    const n = rows.ids.byteLength / 8;
    const ids = new DataView(rows.ids.buffer, rows.ids.byteOffset, rows.ids.byteLength);
    const ranks = new Float64Array(n);
    const order: number[] = [];
    for (let k = 0; k < n; k++) {
      const id = ids.getBigInt64(8 * k, true);
      if (restored.ownerOf(id) !== fileIndex) continue;
      ranks[k] = rankOf(table.sorted, id);
      order.push(k);
    }
    order.sort((a, b) => ranks[a]! - ranks[b]!);
    const rowBytes = table.dim * 4;
    const strideBytes = rows.stride * 4;
    for (let start = 0; start < order.length;) {
      let end = start + 1;
      while (end < order.length && ranks[order[end]!] === ranks[order[end - 1]!]! + 1) end++;
      const run = Buffer.allocUnsafe((end - start) * rowBytes);
      for (let j = start; j < end; j++) {
        const from = order[j]! * strideBytes;
        run.set(rows.values.subarray(from, from + rowBytes), (j - start) * rowBytes);
      }
      writeFully(fd, run, dataStart + table.values.offset + ranks[order[start]!]! * rowBytes);
      start = end;
    }
  }
}

/** The index of `id` in `sorted` (it is there: pass 1 saw every id). */
function rankOf(sorted: BigInt64Array, id: bigint): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = sorted[mid]!;
    if (v === id) return mid;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  throw new Error(`id ${id} was not seen in the first pass (a file changed between the passes)`);
}

function writeFully(fd: number, bytes: Uint8Array, position: number): void {
  for (let done = 0; done < bytes.byteLength;) {
    done += fs.writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
  }
}
