import {
  resolveRowOptimizerConfig,
  rowLayout,
  type RowOptimizerConfigInput,
} from '@pserver/optimizer';
import {
  bucketsOfIds,
  tableShards,
  type TableEvictions__Output,
  type TableRecord__Output,
  type TableRows__Output,
} from '@pserver/proto';

/** What a checkpoint file holds of one table, summed over its row sections. */
export interface TableSummary {
  name: string;
  dim: number;
  buckets: number;
  step: number;
  /** Rows the table record announces (in a delta: the rows pushed since its parent). */
  rows: number;
  /** A delta's ids evicted since its parent. */
  evicted: number;
  /** Rows of the state the file's chain restores, when known (a delta's chain was read). */
  restored?: number;
  /** Floats a row holds: dim values, then the row optimizer's state. */
  stride: number;
  /** The row optimizer's layout, as the optimizer library names it (`rowwise-adagrad`). */
  layout: string;
  pendingIds: number;
  /** Bytes of the record's and the sections' columns. */
  bytes: number;
}

/**
 * The layout name of a table's row optimizer, or the oneof's name when the library refuses the
 * config (a file written by a newer pserver): `inspect` describes what it can.
 */
export function layoutName(record: TableRecord__Output): string {
  const spec = record.spec!;
  try {
    return rowLayout(
      resolveRowOptimizerConfig(spec.optimizer as RowOptimizerConfigInput | null).rule,
      spec.dim,
    ).name;
  } catch {
    return spec.optimizer?.algorithm ?? 'sgd';
  }
}

/** A summary started from a table record; `addRows` adds its sections. */
export function summarize(record: TableRecord__Output): TableSummary {
  const spec = record.spec!;
  return {
    name: spec.name,
    dim: spec.dim,
    buckets: spec.buckets,
    step: Number(record.step),
    rows: Number(record.rows),
    evicted: Number(record.evicted),
    stride: spec.dim,
    layout: layoutName(record),
    pendingIds: record.pendingIds.byteLength / 8,
    bytes: record.pendingIds.byteLength + record.pendingCounts.byteLength,
  };
}

export function addRows(summary: TableSummary, rows: TableRows__Output): void {
  summary.stride = rows.stride;
  summary.bytes +=
    rows.ids.byteLength +
    rows.values.byteLength +
    rows.lastSeen.byteLength +
    rows.counts.byteLength;
}

/**
 * One line of `inspect`'s table list. A delta's table names the rows it changed and the ids it
 * evicted, then the rows its chain restores (or `restored rows unknown` without its meta).
 */
export function describeTable(t: TableSummary, delta = false): string {
  const state = t.stride - t.dim;
  const rows = delta
    ? `delta: ${t.rows} rows changed, ${t.evicted} ids evicted, ` +
      (t.restored === undefined ? 'restored rows unknown' : `${t.restored} rows restored`)
    : `${t.rows} rows`;
  return (
    `  ${t.name}  dim ${t.dim}  buckets ${t.buckets}  ${rows}  ` +
    `${t.layout} (stride ${t.stride}: ${t.dim} values + ${state} state)  step ${t.step}  ` +
    `${t.bytes} bytes` +
    (t.pendingIds > 0 ? `  ${t.pendingIds} ids pending admission` : '')
  );
}

/**
 * Checks that the ids a shard's checkpoint holds for a table (its rows and its pending ids) are
 * in buckets placed on that shard among `shardCount` (proto/README.md, "Tables"): a row of
 * another shard's bucket would never be read by a client and means a file of the wrong shard or
 * a placement bug. Returns one problem per table at most, naming the first misplaced id.
 */
export class BucketCheck {
  private shards = new Map<string, Uint32Array>();
  private buckets = new Map<string, number>();
  private misplaced = new Map<string, { count: number; first: bigint; bucket: number }>();

  constructor(
    private readonly index: number,
    private readonly shardCount: number,
  ) {}

  table(record: TableRecord__Output): void {
    const { name, buckets } = record.spec!;
    this.buckets.set(name, buckets);
    if (!this.shards.has(name)) this.shards.set(name, tableShards(name, buckets, this.shardCount));
    this.ids(name, record.pendingIds);
  }

  rows(rows: TableRows__Output): void {
    this.ids(rows.table, rows.ids);
  }

  /** A delta's evicted ids: the shard held their rows, so they too are in its buckets. */
  evictions(evictions: TableEvictions__Output): void {
    this.ids(evictions.table, evictions.ids);
  }

  problems(): string[] {
    return [...this.misplaced].map(
      ([name, m]) =>
        `table ${name}: ${m.count} ids in buckets of other shards (first: id ${m.first}, ` +
        `bucket ${m.bucket} of ${this.buckets.get(name)}, on shard ${this.shards.get(name)![m.bucket]} ` +
        `of ${this.shardCount}, not ${this.index})`,
    );
  }

  private ids(table: string, ids: Uint8Array): void {
    const shards = this.shards.get(table)!;
    const buckets = bucketsOfIds(ids, this.buckets.get(table)!);
    const view = new DataView(ids.buffer, ids.byteOffset, ids.byteLength);
    for (let i = 0; i < buckets.length; i++) {
      if (shards[buckets[i]!] === this.index) continue;
      const m = this.misplaced.get(table);
      if (m) m.count++;
      else
        this.misplaced.set(table, {
          count: 1,
          first: view.getBigInt64(8 * i, true),
          bucket: buckets[i]!,
        });
    }
  }
}
