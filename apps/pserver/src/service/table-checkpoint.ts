import type { SnapshotBuffers, TableSnapshot } from '@pserver/checkpoint';
import type { TableRecord__Output, TableRows__Output } from '@pserver/proto';
import { PserverError } from './errors';
import { checkTableSpec, createShardTable, type ShardTable } from './table-spec';

/** Rows per checkpoint section: about 32 MiB of values, so no record nears protobuf's limits. */
function rowsPerSection(stride: number): number {
  return Math.max(1, Math.floor((32 * 1024 * 1024) / (4 * stride + 16)));
}

/** A copy of a table's part for a checkpoint, taken synchronously (no push lands in between). */
export function snapshotTable(shardTable: ShardTable, buffers: SnapshotBuffers): TableSnapshot {
  const { table, spec } = shardTable;
  const pending = table.snapshotPending();
  const bytes = (a: ArrayBufferView): Uint8Array =>
    new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  return {
    spec: { ...spec, name: table.name },
    step: table.step,
    stride: table.stride,
    pendingIds: pending.ids,
    pendingCounts: bytes(pending.counts),
    sections: table
      .snapshotRows(rowsPerSection(table.stride), (n) => buffers.take(n))
      .map((s) => ({
        ids: s.ids,
        values: bytes(s.values),
        lastSeen: bytes(s.lastSeen),
        counts: bytes(s.count),
      })),
  };
}

/**
 * Rebuilds tables from a checkpoint's records, one row section at a time (the reader may reuse
 * its buffers: every column is copied out during the call).
 */
export class TableRestorer {
  readonly tables: ShardTable[] = [];

  constructor(
    private readonly shardIndex: number,
    private readonly shardCount: number,
  ) {}

  table(record: TableRecord__Output): void {
    const restored = createShardTable(
      checkTableSpec(record.spec),
      this.shardIndex,
      this.shardCount,
    );
    const pendingCounts = new Uint32Array(record.pendingCounts.byteLength / 4);
    new Uint8Array(pendingCounts.buffer).set(record.pendingCounts);
    restored.table.restoreState(record.step, {
      ids: Uint8Array.from(record.pendingIds),
      counts: pendingCounts,
    });
    this.tables.push(restored);
  }

  tableRows(rows: TableRows__Output): void {
    const current = this.tables[this.tables.length - 1];
    if (!current || current.table.name !== rows.table || rows.stride !== current.table.stride) {
      throw new PserverError(
        'PSERVER_INVALID_ARGUMENT',
        `checkpoint: rows of table ${rows.table} (stride ${rows.stride}) do not match its spec`,
      );
    }
    const copy = <T extends Float32Array | Uint32Array>(target: T, from: Uint8Array): T => {
      new Uint8Array(target.buffer).set(from);
      return target;
    };
    const n = rows.ids.byteLength / 8;
    current.table.restoreRows({
      ids: Uint8Array.from(rows.ids),
      values: copy(new Float32Array(n * rows.stride), rows.values),
      lastSeen: copy(new Uint32Array(n), rows.lastSeen),
      count: copy(new Uint32Array(n), rows.counts),
    });
  }
}
