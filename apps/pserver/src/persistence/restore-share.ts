import {
  CheckpointError,
  readShardShare,
  type CheckpointMeta,
  type ShardShare,
} from '@pserver/checkpoint';
import { bucketsOfIds, shardOf, tableShards } from '@pserver/proto';
import type { SliceGroupSnapshot, SliceMark } from '../shard/marks-ahead';
import type { Shard } from '../shard/shard';
import { StoredTensor } from '../shard/stored-tensor';
import { checkTableSpec, createShardTable, type ShardTable } from '../shard/table-spec';

/** A job's checkpoints written at another shard count, which a new shard restores its share of. */
export interface ReshapeSources {
  /** The shard count they were written at. */
  readonly from: number;
  /** Each old index's latest committed checkpoint (absent: it never committed one). */
  readonly sources: ReadonlyMap<number, CheckpointMeta>;
}

/** One source's part of the share: what it holds of this shard's slices, and its marks there. */
interface SourcePart {
  index: number;
  share: ShardShare;
  /** This share's slices, grouped by the marks they hold (the source's own, and its groups ahead). */
  groups: SliceGroupSnapshot[];
}

/**
 * Restores `shard` (index i of a job now at `shard.shardCount`) from its share of the job's
 * checkpoints written at `reshape.from` shards: from every old shard's latest checkpoint, the dense
 * tensors and blocks and the table buckets the placement rule gives index i now — read through the
 * checkpoint index, not a scan (`readShardShare`) — with their optimizer state, each table's
 * pending admissions of those buckets, and each row's age (its table's step, which differs between
 * shards, becomes the largest of its sources', every row's last step moved with it).
 *
 * Step marks are a property of slices: each old shard's slices bring its marks. The new shard's own
 * marks are, per trainer, the lowest over its slices (a trainer absent from a shard's marks never
 * pushed there: 0), and the slices whose shard counted more keep that as marks ahead
 * (`MarksAhead`), so a step in flight when the job stopped — applied on one old shard, not on
 * another — is applied exactly once where it was not. SYNC: the steps closed are the fewest of the
 * sources' (a step one old shard closed is then open here, its contributors' marks ahead where it
 * was applied).
 */
export async function restoreShare(
  root: string,
  reshape: ReshapeSources,
  shard: Shard,
): Promise<{ bytes: number; tensors: number; tables: number; sources: number }> {
  const { index, shardCount } = shard;
  const wantedTensor = (name: string): boolean => shardOf(name, shardCount) === index;
  const owners = new Map<string, { now: Uint32Array; then: Uint32Array }>();
  const ownersOf = (table: string, buckets: number) => {
    let found = owners.get(table);
    if (!found)
      owners.set(
        table,
        (found = {
          now: tableShards(table, buckets, shardCount),
          then: tableShards(table, buckets, reshape.from),
        }),
      );
    return found;
  };
  const parts: SourcePart[] = [];
  let bytes = 0;
  for (const [source, meta] of [...reshape.sources].sort(([a], [b]) => a - b)) {
    const share = await readShardShare(root, meta, {
      tensor: wantedTensor,
      // The table rule is the dense one on the name `<table>@<bucket>`.
      bucket: (table, bucket) => shardOf(`${table}@${bucket}`, shardCount) === index,
    });
    const { shardIndex, shardCount: writtenAt } = share.header;
    if (shardIndex !== source || writtenAt !== reshape.from)
      throw new CheckpointError(
        'CHECKPOINT_INCOMPATIBLE',
        `checkpoint ${meta.path} holds shard ${shardIndex} of ${writtenAt}, not ${source} of ${reshape.from}`,
      );
    bytes += share.bytesRead;
    parts.push({ index: source, share, groups: groupsOf(source, share, ownersOf, index) });
  }
  const tensors: StoredTensor[] = [];
  try {
    for (const { share } of parts)
      for (const record of share.tensors) tensors.push(StoredTensor.restore(record, shard.memory));
    const tables = mergeTables(parts, index, shardCount, ownersOf);
    // The steps closed on every slice held: a source none of whose slices came here says nothing.
    // A share of no slice at all (the job has fewer blocks and buckets than shards) is at every
    // source's lowest clock and marks: it then neither waits for the steps the job closed nor
    // counts them closed without their contributions.
    const holding = parts.filter((part) => part.groups.some((group) => group.slices.length > 0));
    const { marks, ahead } =
      holding.length > 0
        ? mergeMarks(holding.flatMap((part) => part.groups))
        : { marks: lowestMarks(parts.map(({ share }) => share.marks.map(toMark))), ahead: [] };
    const clocks = (holding.length > 0 ? holding : parts).map(({ share }) => share.closedSteps);
    const closedSteps = Math.min(...clocks, Infinity);
    const updatesApplied = [...reshape.sources.values()].reduce(
      (total, meta) => total + meta.updatesApplied,
      0,
    );
    shard.load(
      tensors,
      tables,
      marks,
      updatesApplied,
      Number.isFinite(closedSteps) ? closedSteps : 0,
      ahead,
    );
    return { bytes, tensors: tensors.length, tables: tables.length, sources: parts.length };
  } catch (err) {
    for (const tensor of tensors) tensor.release();
    throw err;
  }
}

/**
 * The slices of one source's share, by the marks they hold: those in one of the source's own
 * groups ahead hold its marks over the source's, the others the source's.
 */
function groupsOf(
  source: number,
  share: ShardShare,
  ownersOf: (table: string, buckets: number) => { now: Uint32Array; then: Uint32Array },
  index: number,
): SliceGroupSnapshot[] {
  const slices: string[] = share.tensors.map((t) => t.tensor!.name);
  for (const { record } of share.tables) {
    const { name, buckets } = record.spec!;
    const { now, then } = ownersOf(name, buckets);
    for (let b = 0; b < buckets; b++)
      if (then[b] === source && now[b] === index) slices.push(`${name}@${b}`);
  }
  const own = share.marks.map(toMark);
  const mine = new Set(slices);
  const groups: SliceGroupSnapshot[] = [];
  const inGroups = new Set<string>();
  for (const group of share.ahead) {
    const kept = group.slices.filter((slice) => mine.has(slice));
    if (kept.length === 0) continue;
    for (const slice of kept) inGroups.add(slice);
    const over = new Map(own.map((m) => [m.trainerId, m]));
    for (const mark of group.marks.map(toMark)) over.set(mark.trainerId, mark);
    groups.push({ slices: kept, marks: [...over.values()] });
  }
  groups.push({ slices: slices.filter((slice) => !inGroups.has(slice)), marks: own });
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
  // A group of no slice (a source none of whose slices came here) says nothing.
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
 * Each table of the share, its rows from every source: the step is the largest of the sources',
 * and a row's last step moves with its source's, so its age (what eviction reads) stays; the
 * pending admissions are those of the share's buckets.
 */
function mergeTables(
  parts: readonly SourcePart[],
  index: number,
  shardCount: number,
  ownersOf: (table: string, buckets: number) => { now: Uint32Array; then: Uint32Array },
): ShardTable[] {
  const byName = new Map<string, ShardShare['tables'][number][]>();
  for (const { share } of parts)
    for (const table of share.tables) {
      const name = table.record.spec!.name;
      byName.set(name, [...(byName.get(name) ?? []), table]);
    }
  const tables: ShardTable[] = [];
  for (const [name, of] of byName) {
    const made = createShardTable(checkTableSpec(of[0]!.record.spec), index, shardCount);
    const step = Math.max(...of.map((t) => Number(t.record.step)));
    const { now } = ownersOf(name, made.table.buckets);
    const pendingIds: Uint8Array[] = [];
    const pendingCounts: number[] = [];
    for (const { record } of of) {
      const ids = record.pendingIds;
      const counts = new Uint32Array(Uint8Array.from(record.pendingCounts).buffer);
      const bucket = bucketsOfIds(ids, made.table.buckets);
      for (let k = 0; k < bucket.length; k++)
        if (now[bucket[k]!] === index) {
          pendingIds.push(ids.subarray(8 * k, 8 * k + 8));
          pendingCounts.push(counts[k]!);
        }
    }
    made.table.restoreState(step, {
      ids: concat(pendingIds),
      counts: Uint32Array.from(pendingCounts),
    });
    for (const { record, rows, stride } of of) {
      const n = rows.ids.byteLength / 8;
      if (n === 0) continue;
      const lastSeen = new Uint32Array(Uint8Array.from(rows.lastSeen).buffer);
      const shift = step - Number(record.step);
      for (let k = 0; k < n; k++) lastSeen[k] = lastSeen[k]! + shift;
      made.table.restoreRows({
        ids: Uint8Array.from(rows.ids),
        values: new Float32Array(Uint8Array.from(rows.values).buffer, 0, n * stride),
        lastSeen,
        count: new Uint32Array(Uint8Array.from(rows.counts).buffer),
      });
    }
    tables.push(made);
  }
  return tables;
}

function toMark(mark: { trainerId: number; step: number; updatedUnixMs: number | string }) {
  return { trainerId: mark.trainerId, step: mark.step, updatedUnixMs: Number(mark.updatedUnixMs) };
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((total, p) => total + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
