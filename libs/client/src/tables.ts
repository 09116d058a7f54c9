import {
  checkTableBuckets,
  tableShards,
  type TableSpec,
  type TableSpec__Output,
} from '@pserver/proto';
import { ClientError } from './errors';

/** A table's spec as `initParams` takes it: a name and a row width; the rest has defaults. */
export type TableInit = TableSpec & { name: string; dim: number };

/** What routing a table's ids needs: its row width and bucket count. */
export interface TableLayout {
  readonly name: string;
  readonly dim: number;
  readonly buckets: number;
}

/** Buckets of a table whose spec leaves them unset (proto/pserver/v1/table.proto's advice). */
export const defaultTableBuckets = 4096;
/** The widest row the contract allows. */
const maxTableDim = 4096;

/**
 * The spec sent on InitTable: buckets filled in (every trainer routes with the same count), and
 * checked where the client routes by it, so a bad spec is refused before anything is sent.
 */
export function completeTableSpec(spec: TableInit): TableInit & { buckets: number } {
  const buckets = spec.buckets ?? defaultTableBuckets;
  checkLayout(spec.name, spec.dim, buckets);
  return { ...spec, buckets };
}

function checkLayout(name: string, dim: number, buckets: number): void {
  if (name.includes('@'))
    throw new ClientError('CLIENT_UNKNOWN_TENSOR', `table ${name}: '@' is not allowed in names`);
  if (!Number.isInteger(dim) || dim < 1 || dim > maxTableDim)
    throw new ClientError(
      'CLIENT_SHAPE_MISMATCH',
      `table ${name}: dim must be an integer in [1, ${maxTableDim}], got ${dim}`,
    );
  try {
    checkTableBuckets(buckets, `table ${name}`);
  } catch (err) {
    throw new ClientError('CLIENT_SHAPE_MISMATCH', (err as Error).message);
  }
}

/**
 * The tables a client knows (declared at `initParams` or listed from the shards) and, per table
 * and shard count, the bucket → shard array: computed once per view shape, then every id is
 * routed with one mix and one lookup. The array depends only on the table, its buckets and the
 * shard count (the placement rule has no other input), so a new view with the same shard count
 * (a pserver replaced) reuses it.
 */
export class TableDirectory {
  private readonly layouts = new Map<string, TableLayout>();
  private readonly routes = new Map<string, Uint32Array>();

  /** Records a table; a different layout under a known name replaces it (and its routes). */
  declare(layout: TableLayout): void {
    checkLayout(layout.name, layout.dim, layout.buckets);
    const known = this.layouts.get(layout.name);
    if (known && known.dim === layout.dim && known.buckets === layout.buckets) return;
    this.layouts.set(layout.name, { name: layout.name, dim: layout.dim, buckets: layout.buckets });
    for (const key of [...this.routes.keys()])
      if (key.startsWith(`${layout.name}@`)) this.routes.delete(key);
  }

  /** Records the tables the shards listed (ListParamsResponse.tables). */
  learn(specs: readonly TableSpec__Output[]): void {
    for (const spec of specs)
      this.declare({ name: spec.name, dim: spec.dim, buckets: spec.buckets });
  }

  get(name: string): TableLayout | undefined {
    return this.layouts.get(name);
  }

  /** Every known table by name. */
  all(): TableLayout[] {
    return [...this.layouts.values()];
  }

  /** The shard of each of `table`'s buckets among `shardCount` shards. */
  shardsOf(layout: TableLayout, shardCount: number): Uint32Array {
    // '@' cannot be in a table's name, so the key is unambiguous.
    const key = `${layout.name}@${layout.buckets}@${shardCount}`;
    let shards = this.routes.get(key);
    if (!shards) {
      shards = tableShards(layout.name, layout.buckets, shardCount);
      this.routes.set(key, shards);
    }
    return shards;
  }
}
