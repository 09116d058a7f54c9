import {
  CheckpointError,
  readShardShare,
  type CheckpointMeta,
  type ShardShare,
} from '@pserver/checkpoint';
import type { TensorRecord__Output } from '@pserver/proto';
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
  const rebuilt: TensorsRebuilt[] = [];
  let bytes = 0;
  try {
    for (const [source, meta] of [...reshape.sources].sort(([a], [b]) => a - b)) {
      // Each tensor is rebuilt in the shard's memory as it is read.
      const tensors = new TensorsRebuilt(shard);
      rebuilt.push(tensors);
      const share = await readShardShare(root, meta, placement.sliceFilter(index), (record) =>
        tensors.add(record),
      );
      const { shardIndex, shardCount: writtenAt } = share.header;
      if (shardIndex !== source || writtenAt !== reshape.from)
        throw new CheckpointError(
          'CHECKPOINT_INCOMPATIBLE',
          `checkpoint ${meta.path} holds shard ${shardIndex} of ${writtenAt}, not ${source} of ${reshape.from}`,
        );
      bytes += share.bytesRead;
      parts.push(partOfShare(source, share, tensors.done, meta.updatesApplied));
    }
    mergeParts(shard, placement, parts);
  } catch (err) {
    for (const tensors of rebuilt) tensors.release();
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

/**
 * The tensors of one old shard's share, rebuilt in the new shard's memory one by one as they are
 * read, yielding to the event loop every `bytesPerTurn`.
 */
class TensorsRebuilt {
  readonly done: StoredTensor[] = [];
  private sinceTurn = 0;

  constructor(private readonly shard: Shard) {}

  async add(record: TensorRecord__Output): Promise<void> {
    this.done.push(StoredTensor.restore(record, this.shard.memory));
    this.sinceTurn += record.tensor?.content.byteLength ?? 0;
    if (this.sinceTurn < bytesPerTurn) return;
    this.sinceTurn = 0;
    await new Promise(setImmediate);
  }

  release(): void {
    for (const tensor of this.done.splice(0)) tensor.release();
  }
}

/** What a checkpoint's share gives the merge: its tensors rebuilt, rows as columns. */
function partOfShare(
  source: number,
  share: ShardShare,
  tensors: StoredTensor[],
  updatesApplied: number,
): SharePart {
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
