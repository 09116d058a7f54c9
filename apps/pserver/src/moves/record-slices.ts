import type { SparseGrad__Output, TableEvictions__Output } from '@pserver/proto';
import { bucketsOfIds } from '@pserver/proto';
import type { PushRecord } from '../shard/push-record';
import type { Shard } from '../shard/shard';
import { SharePlacement, type MoveTarget } from '../shard/share-parts';

/** What slicing needs of the sender's tables: each one's rows' width and bucket count. */
export type TableShape = (table: string) => { dim: number; buckets: number };

/**
 * The part of an applied push that index `index` of `placement.to` holds: what a live move
 * forwards to the receiver of those slices, which replays it on its copy as a replica does. Every
 * push is forwarded, also one with nothing for the receiver: its step marks are. A table keeps
 * its entry when none of its rows is the receiver's: a table counts the pushes it takes (its
 * step, which row ages are measured in), and the copy counts them as the source does.
 */
export function sliceRecord(
  record: PushRecord,
  placement: SharePlacement,
  index: number,
  shapeOf: TableShape,
): PushRecord {
  const keeps = new Map<string, (ids: Uint8Array) => Uint8Array>();
  const keep = (table: string): ((ids: Uint8Array) => Uint8Array) => {
    let found = keeps.get(table);
    if (!found) {
      const { buckets } = shapeOf(table);
      const { now } = placement.ownersOf(table, buckets);
      found = (ids) => {
        const bucket = bucketsOfIds(ids, buckets);
        const kept = new Uint8Array(bucket.length);
        for (let k = 0; k < bucket.length; k++) kept[k] = now[bucket[k]!] === index ? 1 : 0;
        return kept;
      };
      keeps.set(table, found);
    }
    return found;
  };
  return {
    ...record,
    grads: record.grads.filter((piece) => placement.holdsTensor(index, piece.name)),
    sparse: record.sparse.map((slice) => sliceRows(slice, keep(slice.table)(slice.ids), shapeOf)),
    evictions: record.evictions.map((evicted) => sliceEvictions(evicted, keep(evicted.table))),
  };
}

function sliceRows(
  slice: SparseGrad__Output,
  kept: Uint8Array,
  shapeOf: TableShape,
): SparseGrad__Output {
  if (kept.every((k) => k === 1)) return slice;
  const { dim } = shapeOf(slice.table);
  return {
    ...slice,
    ids: pick(slice.ids, kept, 8),
    grads: pick(slice.grads, kept, 4 * dim),
    counts: slice.counts.byteLength > 0 ? pick(slice.counts, kept, 4) : slice.counts,
  };
}

function sliceEvictions(
  evicted: TableEvictions__Output,
  keep: (ids: Uint8Array) => Uint8Array,
): TableEvictions__Output {
  const kept = keep(evicted.ids);
  return kept.every((k) => k === 1) ? evicted : { ...evicted, ids: pick(evicted.ids, kept, 8) };
}

/** The items (`width` bytes each) of `bytes` whose `kept` flag is 1, in order. */
function pick(bytes: Uint8Array, kept: Uint8Array, width: number): Buffer {
  let n = 0;
  for (const k of kept) n += k;
  const out = Buffer.allocUnsafe(n * width);
  let at = 0;
  for (let k = 0; k < kept.length; k++)
    if (kept[k] === 1) {
      out.set(bytes.subarray(k * width, (k + 1) * width), at);
      at += width;
    }
  return out;
}

/** How a shard's applied pushes are sliced for each receiver of a live move. */
export function slicerOf(shard: Shard): (record: PushRecord, to: MoveTarget) => PushRecord {
  const placements = new Map<number, SharePlacement>();
  const shapeOf: TableShape = (table) => {
    const { dim, buckets } = shard.tables.get(table)!.table;
    return { dim, buckets };
  };
  return (record, { index, shardCount }) => {
    let placement = placements.get(shardCount);
    if (!placement)
      placements.set(shardCount, (placement = new SharePlacement(shard.shardCount, shardCount)));
    return sliceRecord(record, placement, index, shapeOf);
  };
}
