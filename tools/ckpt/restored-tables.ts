import type {
  TableEvictions__Output,
  TableRecord__Output,
  TableRows__Output,
} from '@pserver/proto';

/**
 * The ids of one table that a chain restores, and for each the file of the chain whose row it
 * ends with: what the pserver's `TableRestorer` rebuilds, without the rows themselves (10 bytes
 * an id). A file's evictions remove ids, then its rows replace or add theirs, so an id evicted
 * and pushed again in the same delta keeps that delta's row.
 */
export class RestoredIds {
  /** Sorted as signed 64-bit integers. */
  ids = new BigInt64Array(0);
  /** `owners[k]`: the index in the chain (0 for the full checkpoint) of the file holding `ids[k]`'s row. */
  owners = new Uint16Array(0);
  private evicted: BigInt64Array[] = [];
  private pushed: BigInt64Array[] = [];

  constructor(readonly name: string) {}

  /** A section of the current file's evicted ids (copied: the reader may reuse its buffers). */
  addEvictions(ids: Uint8Array): void {
    this.evicted.push(copyIds(ids));
  }

  /** A section of the current file's rows; only the ids are kept. */
  addRows(ids: Uint8Array): void {
    this.pushed.push(copyIds(ids));
  }

  /** Applies what file `index` of the chain brought: its evictions, then its rows. */
  apply(index: number, file: string): void {
    if (index > 0xffff) throw new Error(`${file}: a chain of more than 65536 files`);
    const evicted = sortedConcat(this.evicted);
    const rows = sortedConcat(this.pushed);
    this.evicted = [];
    this.pushed = [];
    for (let k = 1; k < rows.length; k++) {
      if (rows[k] === rows[k - 1])
        throw new Error(`${file}: table ${this.name}: id ${rows[k]} has two rows`);
    }
    const { ids, owners } = this;
    const nextIds = new BigInt64Array(ids.length + rows.length);
    const nextOwners = new Uint16Array(nextIds.length);
    let n = 0;
    let e = 0;
    for (let i = 0, j = 0; i < ids.length || j < rows.length;) {
      if (j < rows.length && (i >= ids.length || rows[j]! <= ids[i]!)) {
        // The file's row replaces the one restored so far, or adds the id.
        if (i < ids.length && ids[i] === rows[j]) i++;
        nextIds[n] = rows[j++]!;
        nextOwners[n++] = index;
        continue;
      }
      const id = ids[i]!;
      while (e < evicted.length && evicted[e]! < id) e++;
      if (e >= evicted.length || evicted[e] !== id) {
        nextIds[n] = id;
        nextOwners[n++] = owners[i]!;
      }
      i++;
    }
    this.ids = nextIds.slice(0, n);
    this.owners = nextOwners.slice(0, n);
  }

  /** The index of the file holding `id`'s restored row, or -1 when the chain removed or never had it. */
  ownerOf(id: bigint): number {
    let lo = 0;
    let hi = this.ids.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.ids[mid]!;
      if (v === id) return this.owners[mid]!;
      if (v < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/**
 * Follows a chain's table frames file by file (a visitor's `file`, `table`, `tableEvictions` and
 * `tableRows`, then `end`), as the pserver restores them: a table seen first in a delta starts
 * empty, a table a file does not mention stays as it was.
 */
export class RestoredTables {
  readonly tables = new Map<string, RestoredIds>();
  private current: { index: number; path: string; tables: Set<RestoredIds> } | undefined;
  private currentTable: RestoredIds | undefined;

  /** Starts file `index` of the chain (0: the full checkpoint), ending the one before. */
  file(index: number, path: string): void {
    this.end();
    this.current = { index, path, tables: new Set() };
  }

  table(record: TableRecord__Output): void {
    const name = record.spec?.name ?? '';
    const table = this.tables.get(name) ?? new RestoredIds(name);
    this.tables.set(name, table);
    if (this.current!.tables.has(table))
      throw new Error(`${this.current!.path}: table ${name} appears twice`);
    this.current!.tables.add(table);
    this.currentTable = table;
  }

  tableEvictions(evictions: TableEvictions__Output): void {
    this.expect(evictions.table).addEvictions(evictions.ids);
  }

  tableRows(rows: TableRows__Output): void {
    this.expect(rows.table).addRows(rows.ids);
  }

  /** Applies the last file read; the tables then hold the chain's restored ids. */
  end(): void {
    const current = this.current;
    if (!current) return;
    for (const table of current.tables) table.apply(current.index, current.path);
    this.current = undefined;
    this.currentTable = undefined;
  }

  private expect(name: string): RestoredIds {
    // The reader checks that sections follow their table's record; this only names the table.
    if (!this.currentTable || this.currentTable.name !== name)
      throw new Error(`${this.current?.path}: records of table ${name} without its table record`);
    return this.currentTable;
  }
}

function copyIds(ids: Uint8Array): BigInt64Array {
  return new BigInt64Array(new Uint8Array(ids).buffer);
}

function sortedConcat(parts: BigInt64Array[]): BigInt64Array {
  const all = new BigInt64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return all.sort();
}
