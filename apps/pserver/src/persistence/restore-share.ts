import {
  CheckpointError,
  readShardShare,
  type CheckpointMeta,
  type ShardShare,
} from '@pserver/checkpoint';
import type { Shard } from '../shard/shard';
import { mergeParts, SharePlacement, type SharePart } from '../shard/share-parts';
import { StoredTensor } from '../shard/stored-tensor';
import { checkTableSpec } from '../shard/table-spec';

/** A job's checkpoints written at another shard count, which a new shard restores its share of. */
export interface ReshapeSources {
  /** The shard count they were written at. */
  readonly from: number;
  /** Each old index's latest committed checkpoint (absent: it never committed one). */
  readonly sources: ReadonlyMap<number, CheckpointMeta>;
}

/**
 * Restores `shard` (index i of a job now at `shard.shardCount`) from its share of the job's
 * checkpoints written at `reshape.from` shards: from every old shard's latest checkpoint, the dense
 * tensors and blocks and the table buckets the placement rule gives index i now — read through the
 * checkpoint index, not a scan (`readShardShare`) — with their optimizer state, each table's
 * pending admissions of those buckets, and each row's age (its table's step, which differs between
 * shards, becomes the largest of its sources', every row's last step moved with it).
 *
 * The parts are merged as `mergeParts` says: step marks stay a property of the slices.
 */
export async function restoreShare(
  root: string,
  reshape: ReshapeSources,
  shard: Shard,
): Promise<{ bytes: number; tensors: number; tables: number; sources: number }> {
  const { index, shardCount } = shard;
  const placement = new SharePlacement(reshape.from, shardCount);
  const parts: SharePart[] = [];
  let bytes = 0;
  try {
    for (const [source, meta] of [...reshape.sources].sort(([a], [b]) => a - b)) {
      const share = await readShardShare(root, meta, placement.sliceFilter(index));
      const { shardIndex, shardCount: writtenAt } = share.header;
      if (shardIndex !== source || writtenAt !== reshape.from)
        throw new CheckpointError(
          'CHECKPOINT_INCOMPATIBLE',
          `checkpoint ${meta.path} holds shard ${shardIndex} of ${writtenAt}, not ${source} of ${reshape.from}`,
        );
      bytes += share.bytesRead;
      parts.push(await partOfShare(source, share, meta.updatesApplied, shard));
    }
    mergeParts(shard, placement, parts);
  } catch (err) {
    for (const part of parts) for (const tensor of part.tensors) tensor.release();
    throw err;
  }
  const tables = new Set(parts.flatMap((part) => part.tables.map((t) => t.checked.spec.name)));
  return {
    bytes,
    tensors: parts.reduce((total, part) => total + part.tensors.length, 0),
    tables: tables.size,
    sources: parts.length,
  };
}

/**
 * Tensor bytes rebuilt between two turns of the event loop: a live move's receiver loads its
 * copies while it serves (its own shard too, when it was an old primary), and a part of hundreds
 * of MiB rebuilt in one go — fresh memory, faulted in — would hold its pushes for a second.
 */
const bytesPerTurn = 16 << 20;

/** What a checkpoint's share gives the merge: tensors rebuilt, rows as columns. */
async function partOfShare(
  source: number,
  share: ShardShare,
  updatesApplied: number,
  shard: Shard,
): Promise<SharePart> {
  const tensors: StoredTensor[] = [];
  try {
    let sinceTurn = 0;
    for (const record of share.tensors) {
      tensors.push(StoredTensor.restore(record, shard.memory));
      sinceTurn += record.tensor?.content.byteLength ?? 0;
      if (sinceTurn < bytesPerTurn) continue;
      sinceTurn = 0;
      await new Promise(setImmediate);
    }
  } catch (err) {
    for (const tensor of tensors) tensor.release();
    throw err;
  }
  const u32 = (bytes: Uint8Array): Uint32Array => new Uint32Array(Uint8Array.from(bytes).buffer);
  return {
    source,
    tensors,
    tables: share.tables.map(({ record, rows, stride }) => {
      const n = rows.ids.byteLength / 8;
      return {
        checked: checkTableSpec(record.spec),
        step: Number(record.step),
        pending: { ids: record.pendingIds, counts: u32(record.pendingCounts) },
        rows: [
          {
            ids: Uint8Array.from(rows.ids),
            values: new Float32Array(Uint8Array.from(rows.values).buffer, 0, n * stride),
            lastSeen: u32(rows.lastSeen),
            count: u32(rows.counts),
          },
        ],
      };
    }),
    marks: share.marks.map(toMark),
    ahead: share.ahead.map((group) => ({ slices: group.slices, marks: group.marks.map(toMark) })),
    closedSteps: share.closedSteps,
    updatesApplied,
  };
}

function toMark(mark: { trainerId: number; step: number; updatedUnixMs: number | string }) {
  return { trainerId: mark.trainerId, step: mark.step, updatedUnixMs: Number(mark.updatedUnixMs) };
}
