import type { SnapshotBuffers, TableSnapshot } from '@pserver/checkpoint';
import type { TableRowsSection } from '@pserver/embedding';
import type {
  TableEvictions__Output,
  TableRecord__Output,
  TableRows__Output,
} from '@pserver/proto';
import { bucketsOfIds } from '@pserver/proto';
import { PserverError } from '../shard/errors';
import { pickRows } from '../shard/share-parts';
import { checkTableSpec, createShardTable, type ShardTable } from '../shard/table-spec';

/**
 * Rows per checkpoint section: about 2 MiB of values. A full checkpoint gathers each section
 * from its copy while pushes wait (between two writes), so a small section keeps that wait short
 * (sections of 32 MiB held pushes about 170 ms); a share of the file read on another shard count
 * reads whole sections, so it also reads less (libs/checkpoint/README.md).
 */
function rowsPerSectionOf(stride: number): number {
  return Math.max(1, Math.floor((2 * 1024 * 1024) / (4 * stride + 16)));
}

/**
 * A copy of a table's part for a checkpoint, taken synchronously (no push lands in between):
 * every row, or for a delta the rows pushed and the ids evicted since the last copy (asked for
 * only while the table can give one: its `changedBytes` is finite).
 */
export function snapshotTable(
  shardTable: ShardTable,
  buffers: SnapshotBuffers,
  delta = false,
  /** A full copy of some buckets only (a live move's): the rows of the others are left out. */
  keepBucket?: (bucket: number) => boolean,
): TableSnapshot {
  const { table } = shardTable;
  const take = (n: number): Uint8Array => buffers.take(n);
  const rowsPerSection = rowsPerSectionOf(table.stride);
  if (delta) {
    const changes = table.snapshotChanges(rowsPerSection, take);
    if (!changes)
      throw new Error(
        `table ${table.name}: a delta was asked for after its eviction log overflowed`,
      );
    const count = changes.sections.reduce((n, s) => n + s.lastSeen.length, 0);
    return withRows(
      tableState(shardTable),
      { rows: count, sections: changes.sections },
      changes.evictedIds,
    );
  }
  // The chunks are copied now; each section is ordered and gathered as the writer reads it,
  // into the same buffers (the writer has encoded a section's frame before it asks for more).
  const state = tableState(shardTable);
  return withRows(
    state,
    ofKeptBuckets(table, table.snapshotAllRows(rowsPerSection, take, true), keepBucket),
  );
}

/** A table's copy under way (`startTableSnapshot`): finish it, or cancel it. */
export interface TableSnapshotUnderWay {
  finish(): Promise<TableSnapshot>;
  cancel(): void;
}

/**
 * The same copy as `snapshotTable`, of the table as it is now; a full one is taken
 * copy-on-write (`SparseTable.startSnapshotAllRows`): a push only keeps the rows it changes
 * first, and `finish` copies the rest a few MiB per turn of the event loop. A delta, small by
 * choice, is copied at once.
 */
export function startTableSnapshot(
  shardTable: ShardTable,
  buffers: SnapshotBuffers,
  delta = false,
  keepBucket?: (bucket: number) => boolean,
): TableSnapshotUnderWay {
  if (delta) {
    const snapshot = snapshotTable(shardTable, buffers, true);
    return { finish: () => Promise.resolve(snapshot), cancel: () => undefined };
  }
  const { table } = shardTable;
  // The step and the pending admissions of the moment the copy begins, as the rows.
  const state = tableState(shardTable);
  const copy = table.startSnapshotAllRows(
    rowsPerSectionOf(table.stride),
    (n) => buffers.take(n),
    true,
  );
  return {
    finish: async () => {
      const rows = { rows: copy.rows, sections: await copy.sections() };
      return withRows(state, ofKeptBuckets(table, rows, keepBucket));
    },
    cancel: () => copy.cancel(),
  };
}

/** A table's record for a checkpoint but for its rows: spec, step and pending admissions now. */
function tableState({ table, spec }: ShardTable): Omit<TableSnapshot, 'rows' | 'sections'> {
  const pending = table.snapshotPending();
  return {
    spec: { ...spec, name: table.name },
    step: table.step,
    stride: table.stride,
    pendingIds: pending.ids,
    pendingCounts: bytes(pending.counts),
  };
}

/** The checkpoint record of a table: its `state` and `rows` (and a delta's evicted ids). */
function withRows(
  state: Omit<TableSnapshot, 'rows' | 'sections'>,
  rows: { rows: number; sections: Iterable<TableRowsSection> },
  evictedIds?: Uint8Array,
): TableSnapshot {
  return {
    ...state,
    ...(evictedIds && { evictedIds }),
    rows: rows.rows,
    sections: mapIterable(rows.sections, (s) => ({
      ids: s.ids,
      values: bytes(s.values),
      lastSeen: bytes(s.lastSeen),
      counts: bytes(s.count),
      firstBucket: s.firstBucket!,
      lastBucket: s.lastBucket!,
    })),
  };
}

const bytes = (a: ArrayBufferView): Uint8Array =>
  new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** A full copy's `rows`, or with `keepBucket` (a live move's) those of the kept buckets only. */
function ofKeptBuckets(
  table: ShardTable['table'],
  rows: { rows: number; sections: Iterable<TableRowsSection> },
  keepBucket: ((bucket: number) => boolean) | undefined,
): { rows: number; sections: Iterable<TableRowsSection> } {
  return keepBucket ? keptRows(rows.sections, table.buckets, table.stride, keepBucket) : rows;
}

/** The rows of the kept buckets, copied out section by section (the count goes first). */
function keptRows(
  sections: Iterable<TableRowsSection>,
  buckets: number,
  stride: number,
  keepBucket: (bucket: number) => boolean,
): { rows: number; sections: TableRowsSection[] } {
  const kept: TableRowsSection[] = [];
  let rows = 0;
  // Asked once per bucket, not once per row: the rule hashes a name.
  const keeps = Uint8Array.from({ length: buckets }, (_, b) => (keepBucket(b) ? 1 : 0));
  for (const section of sections) {
    const bucket = bucketsOfIds(section.ids, buckets);
    const at: number[] = [];
    for (let k = 0; k < bucket.length; k++) if (keeps[bucket[k]!] === 1) at.push(k);
    if (at.length === 0) continue;
    kept.push({
      ...pickRows(section, at, stride),
      firstBucket: bucket[at[0]!]!,
      lastBucket: bucket[at.at(-1)!]!,
    });
    rows += at.length;
  }
  return { rows, sections: kept };
}

function* mapIterable<T, U>(items: Iterable<T>, map: (item: T) => U): Generator<U> {
  for (const item of items) yield map(item);
}

/**
 * Rebuilds tables from a checkpoint's records, one row section at a time (the reader may reuse
 * its buffers: every column is copied out during the call). Records of a chain's deltas, read
 * after its full checkpoint, bring the tables up to date: state replaced, evicted ids removed,
 * rows replaced or added.
 */
export class TableRestorer {
  private readonly byName = new Map<string, ShardTable>();
  private current: ShardTable | undefined;
  private delta = false;

  constructor(
    private readonly shardIndex: number,
    private readonly shardCount: number,
  ) {}

  get tables(): ShardTable[] {
    return [...this.byName.values()];
  }

  /** The next file's records are a delta's (true) or a full checkpoint's. */
  startFile(delta: boolean): void {
    this.delta = delta;
    this.current = undefined;
  }

  table(record: TableRecord__Output): void {
    const spec = checkTableSpec(record.spec);
    const pendingCounts = new Uint32Array(record.pendingCounts.byteLength / 4);
    new Uint8Array(pendingCounts.buffer).set(record.pendingCounts);
    const pending = { ids: Uint8Array.from(record.pendingIds), counts: pendingCounts };
    const known = this.byName.get(spec.spec.name ?? '');
    if (this.delta && known) {
      known.table.replaceState(record.step, pending);
      this.current = known;
      return;
    }
    if (known) throw corrupt(`table ${spec.spec.name} appears twice`);
    const restored = createShardTable(spec, this.shardIndex, this.shardCount);
    restored.table.restoreState(record.step, pending);
    this.byName.set(restored.table.name, restored);
    this.current = restored;
  }

  tableEvictions(evictions: TableEvictions__Output): void {
    this.expectCurrent(evictions.table).table.removeRows(Uint8Array.from(evictions.ids));
  }

  tableRows(rows: TableRows__Output): void {
    const current = this.expectCurrent(rows.table);
    if (rows.stride !== current.table.stride)
      throw corrupt(`rows of table ${rows.table} (stride ${rows.stride}) do not match its spec`);
    const copy = <T extends Float32Array | Uint32Array>(target: T, from: Uint8Array): T => {
      new Uint8Array(target.buffer).set(from);
      return target;
    };
    const n = rows.ids.byteLength / 8;
    current.table.restoreRows(
      {
        ids: Uint8Array.from(rows.ids),
        values: copy(new Float32Array(n * rows.stride), rows.values),
        lastSeen: copy(new Uint32Array(n), rows.lastSeen),
        count: copy(new Uint32Array(n), rows.counts),
      },
      this.delta,
    );
  }

  private expectCurrent(name: string): ShardTable {
    if (!this.current || this.current.table.name !== name)
      throw corrupt(`records of table ${name} without its table record before them`);
    return this.current;
  }
}

function corrupt(message: string): PserverError {
  return new PserverError('PSERVER_INVALID_ARGUMENT', `checkpoint: ${message}`);
}
