import { bucketsOfIds, shardOf, tableShards } from '@pserver/proto';
import type { SparseTable } from '@pserver/embedding';
import type { SliceGroupSnapshot, SliceMark } from './marks-ahead';
import type { Shard } from './shard';
import { concat } from './staged-push';
import type { StoredTensor } from './stored-tensor';
import { createShardTable, type CheckedTableSpec, type ShardTable } from './table-spec';

/** Where slices go in a change of the shard count: index `index` of `shardCount` shards. */
export interface MoveTarget {
  index: number;
  shardCount: number;
}

/** How far a receiver of a live move is: its copy sent, loaded, and the last forward it applied. */
export interface MoveProgress {
  member: string;
  to: MoveTarget;
  /** The size of its copy (0 until written) and the bytes of it sent. */
  copyBytes: number;
  sentBytes: number;
  loaded: boolean;
  acked: number;
}

/** Which slices to take: dense tensors and blocks by name, table buckets by table and bucket. */
export interface SliceFilter {
  tensor(name: string): boolean;
  bucket(table: string, bucket: number): boolean;
}

/** Where slices go when a job's shard count changes from `from` to `to`. */
export class SharePlacement {
  private readonly owners = new Map<string, { now: Uint32Array; then: Uint32Array }>();

  constructor(
    readonly from: number,
    readonly to: number,
  ) {}

  /** Whether dense tensor or block `name` belongs to index `index` of the new count. */
  holdsTensor(index: number, name: string): boolean {
    return shardOf(name, this.to) === index;
  }

  /** The slices index `index` of the new count holds (a table's rule is the dense one on `<table>@<bucket>`). */
  sliceFilter(index: number): SliceFilter {
    return {
      tensor: (name) => this.holdsTensor(index, name),
      bucket: (table, bucket) => this.holdsTensor(index, `${table}@${bucket}`),
    };
  }

  /** Each bucket's owner at the new count (`now`) and at the old (`then`). */
  ownersOf(table: string, buckets: number): { now: Uint32Array; then: Uint32Array } {
    let found = this.owners.get(table);
    if (!found)
      this.owners.set(
        table,
        (found = {
          now: tableShards(table, buckets, this.to),
          then: tableShards(table, buckets, this.from),
        }),
      );
    return found;
  }
}

/** A table's rows as columns; `values` holds `stride` floats a row. */
export interface TableRows {
  ids: Uint8Array;
  values: Float32Array;
  lastSeen: Uint32Array;
  count: Uint32Array;
}

/** One old shard's part of a table. */
export interface TablePart {
  checked: CheckedTableSpec;
  step: number;
  /** The old shard's pending admissions, all of them: the merge keeps the new shard's. */
  pending: { ids: Uint8Array; counts: Uint32Array };
  /** The rows of the new shard's buckets only (none when `live` holds them). */
  rows: TableRows[];
  /**
   * From memory: the old shard's table itself, which holds the rows. The merge makes it the new
   * shard's table in place (`SparseTable.reshard`) when it holds the most rows, and copies the
   * new shard's rows out of it otherwise.
   */
  live?: SparseTable;
}

/**
 * What a new shard takes from one old shard (`source`, an index of the old count): its tensors and
 * blocks, its tables' rows, and the old shard's step marks, marks ahead and clock — from a
 * checkpoint (a restore onto another count) or from memory (a live move).
 */
export interface SharePart {
  source: number;
  /** The new shard's tensors only; the merge takes them over. */
  tensors: StoredTensor[];
  tables: TablePart[];
  marks: SliceMark[];
  ahead: SliceGroupSnapshot[];
  closedSteps: number;
  updatesApplied: number;
}

/**
 * What index `index` of `placement.to` takes from `shard`, in memory: an old shard (`source`) or a
 * copy of the slices it gives `index`. Its tensors and tables are taken over: `shard` must not be
 * used after (a table is made the new shard's in place, or has its rows copied out, which
 * restarts its deltas: the next checkpoint of it is a full one).
 */
export function partOfShard(
  shard: Shard,
  placement: SharePlacement,
  index: number,
  source: number,
): SharePart {
  return {
    source,
    tensors: [...shard.tensors.values()].filter((t) => placement.holdsTensor(index, t.name)),
    tables: [...shard.tables.values()].map(({ table, spec, options }) => ({
      checked: { spec, options },
      step: table.step,
      pending: table.snapshotPending(),
      rows: [],
      live: table,
    })),
    marks: shard.marks.entries(),
    ahead: shard.ahead.entries(),
    closedSteps: shard.closedSteps,
    updatesApplied: shard.updatesApplied,
  };
}

/** The positions of `ids` (int64 LE) in the buckets index `index` holds (`now`: each bucket's new owner). */
function heldAt(ids: Uint8Array, now: Uint32Array, index: number): number[] {
  const bucket = bucketsOfIds(ids, now.length);
  const kept: number[] = [];
  for (let k = 0; k < bucket.length; k++) if (now[bucket[k]!] === index) kept.push(k);
  return kept;
}

/** The rows `kept` (positions, ascending) of `rows`, copied. */
export function pickRows(rows: TableRows, kept: readonly number[], stride: number): TableRows {
  const ids = new Uint8Array(8 * kept.length);
  const values = new Float32Array(stride * kept.length);
  const lastSeen = new Uint32Array(kept.length);
  const count = new Uint32Array(kept.length);
  kept.forEach((k, j) => {
    ids.set(rows.ids.subarray(8 * k, 8 * k + 8), 8 * j);
    values.set(rows.values.subarray(stride * k, stride * (k + 1)), stride * j);
    lastSeen[j] = rows.lastSeen[k]!;
    count[j] = rows.count[k]!;
  });
  return { ids, values, lastSeen, count };
}

/**
 * Loads `shard` (index i of `placement.to`) with the merge of its parts, one per old shard: every
 * tensor and row, each table at the largest of its parts' steps (a row's last step moves with its
 * part's, so its age — what eviction reads — stays), the pending admissions of its buckets.
 *
 * Step marks are a property of slices: each part's slices bring its old shard's marks. The shard's
 * own marks are, per trainer, the lowest over its slices (a trainer absent from a part's marks never
 * pushed there: 0), and the slices whose old shard counted more keep that as marks ahead
 * (`MarksAhead`), so a step in flight — applied on one old shard, not on another — is applied
 * exactly once where it was not. SYNC: the steps closed are the fewest of the parts' (a step one
 * old shard closed is then open here, its contributors' marks ahead where it was applied).
 */
export function mergeParts(
  shard: Shard,
  placement: SharePlacement,
  parts: readonly SharePart[],
): void {
  const { index } = shard;
  // A part of no slice at all (the job has fewer blocks and buckets than shards) says nothing;
  // a share of no slice is at every part's lowest clock and marks: it then neither waits for the
  // steps the job closed nor counts them closed without their contributions.
  const groups = parts.map((part) => groupsOf(part, placement, index));
  const holding = parts.filter((_, k) => groups[k]!.some((group) => group.slices.length > 0));
  const { marks, ahead } =
    holding.length > 0
      ? mergeMarks(groups.flat())
      : { marks: lowestMarks(parts.map((part) => part.marks)), ahead: [] };
  const closedSteps = Math.min(
    ...(holding.length > 0 ? holding : parts).map((part) => part.closedSteps),
    Infinity,
  );
  const tables = mergeTables(parts, placement, index);
  shard.load(
    parts.flatMap((part) => part.tensors),
    tables,
    marks,
    parts.reduce((total, part) => total + part.updatesApplied, 0),
    Number.isFinite(closedSteps) ? closedSteps : 0,
    ahead,
  );
}

/**
 * The slices of one part, by the marks they hold: those in one of the old shard's own groups ahead
 * hold its marks over the old shard's, the others the old shard's.
 */
function groupsOf(part: SharePart, placement: SharePlacement, index: number): SliceGroupSnapshot[] {
  const slices: string[] = part.tensors.map((t) => t.name);
  for (const { checked } of part.tables) {
    const name = checked.spec.name!;
    const { now, then } = placement.ownersOf(name, checked.options.buckets);
    for (let b = 0; b < then.length; b++)
      if (then[b] === part.source && now[b] === index) slices.push(`${name}@${b}`);
  }
  const mine = new Set(slices);
  const groups: SliceGroupSnapshot[] = [];
  const inGroups = new Set<string>();
  for (const group of part.ahead) {
    const kept = group.slices.filter((slice) => mine.has(slice));
    if (kept.length === 0) continue;
    for (const slice of kept) inGroups.add(slice);
    const over = new Map(part.marks.map((m) => [m.trainerId, m]));
    for (const mark of group.marks) over.set(mark.trainerId, mark);
    groups.push({ slices: kept, marks: [...over.values()] });
  }
  groups.push({ slices: slices.filter((slice) => !inGroups.has(slice)), marks: part.marks });
  return groups;
}

/**
 * The shard's own marks — per trainer the lowest of its groups' (0 where a group has none), last
 * updated when its latest mark was — and the groups whose marks are above them.
 */
function mergeMarks(all: readonly SliceGroupSnapshot[]): {
  marks: SliceMark[];
  ahead: SliceGroupSnapshot[];
} {
  // A group of no slice (a part none of whose slices came here) says nothing.
  const groups = all.filter((group) => group.slices.length > 0);
  return { marks: lowestMarks(groups.map((group) => group.marks)), ahead: groups };
}

/** Per trainer the lowest of the sets' marks (0 where a set has none), updated at its latest. */
function lowestMarks(sets: readonly (readonly SliceMark[])[]): SliceMark[] {
  const trainers = new Map<number, SliceMark>();
  for (const marks of sets)
    for (const mark of marks) {
      const known = trainers.get(mark.trainerId);
      trainers.set(mark.trainerId, {
        trainerId: mark.trainerId,
        step: Math.min(known?.step ?? mark.step, mark.step),
        updatedUnixMs: Math.max(known?.updatedUnixMs ?? 0, mark.updatedUnixMs),
      });
    }
  for (const marks of sets) {
    const present = new Set(marks.map((m) => m.trainerId));
    for (const mark of trainers.values()) if (!present.has(mark.trainerId)) mark.step = 0;
  }
  return [...trainers.values()];
}

/**
 * Each table of the parts, for the new shard, holding every part's rows of its buckets: the part's
 * table from memory that holds the most rows, made the new shard's in place, or a new one.
 */
function mergeTables(
  parts: readonly SharePart[],
  placement: SharePlacement,
  index: number,
): ShardTable[] {
  const byName = new Map<string, TablePart[]>();
  for (const part of parts)
    for (const table of part.tables) {
      const name = table.checked.spec.name!;
      byName.set(name, [...(byName.get(name) ?? []), table]);
    }
  const tables: ShardTable[] = [];
  for (const [name, of] of byName) {
    const step = Math.max(...of.map((t) => t.step));
    const { now } = placement.ownersOf(name, of[0]!.checked.options.buckets);
    const base = of
      .filter((t) => t.live)
      .reduce<TablePart | undefined>(
        (most, t) => (most && most.live!.rows >= t.live!.rows ? most : t),
        undefined,
      );
    const made = base
      ? { table: base.live!, spec: base.checked.spec, options: base.checked.options }
      : createShardTable(of[0]!.checked, index, placement.to);
    const { table } = made;
    const others = of.filter((t) => t !== base);
    const gainedIds: Uint8Array[] = [];
    const gainedCounts: number[] = [];
    for (const { pending } of others)
      for (const k of heldAt(pending.ids, now, index)) {
        gainedIds.push(pending.ids.subarray(8 * k, 8 * k + 8));
        gainedCounts.push(pending.counts[k]!);
      }
    const gained = { ids: concat(gainedIds), counts: Uint32Array.from(gainedCounts) };
    if (base) {
      table.reshard(index, placement.to, step);
      table.addPending(gained);
    } else table.restoreState(step, gained);
    const held = Uint8Array.from(now, (owner) => (owner === index ? 1 : 0));
    for (const part of others) {
      const shift = step - part.step;
      if (part.live) table.takeRows(part.live, held, shift);
      for (const rows of part.rows) {
        if (rows.lastSeen.length === 0) continue;
        const lastSeen = shift === 0 ? rows.lastSeen : rows.lastSeen.map((s) => s + shift);
        table.restoreRows({ ...rows, lastSeen });
      }
    }
    tables.push(made);
  }
  return tables;
}
