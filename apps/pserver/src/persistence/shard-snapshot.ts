import {
  nowUnixNs,
  type ShardSnapshot,
  type SnapshotBuffers,
  type TensorSnapshot,
} from '@pserver/checkpoint';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Shard } from '../shard/shard';
import type { StoredTensor } from '../shard/stored-tensor';
import type { SliceFilter } from '../shard/share-parts';
import { snapshotTable } from './table-checkpoint';

/** Which file a snapshot is for: its shard epoch, sequence number and id, and a delta's parent. */
export interface SnapshotFile {
  shardEpoch: number;
  seq: number;
  uuid: string;
  parentUuid?: string;
}

/**
 * A copy of everything a checkpoint holds of `shard`, taken synchronously: no update can land in
 * the middle, and updates resume as soon as the copy is taken. With `parentUuid`, a delta: the
 * tables hold only what changed since the last copy (tensors and marks are whole); the caller
 * asks for one only when every table can give it (`changedBytes` is finite).
 */
export function snapshotShard(
  shard: Shard,
  file: SnapshotFile,
  buffers: SnapshotBuffers,
  /** A full copy of some slices only (what a live move's receiver takes). */
  keep?: SliceFilter,
): ShardSnapshot {
  const { tensors, ...rest } = snapshotAllButTensors(shard, file, buffers, keep);
  return { ...rest, tensors: tensors.map((tensor) => tensor.snapshot(buffers)) };
}

/**
 * The same snapshot as `snapshotShard`, of the shard as it is now, with its tensors copied
 * copy-on-write: everything else is copied now, synchronously; each tensor is copied by
 * `tensors` a few MiB per turn of the event loop, or just before an update or a release
 * changes it, whichever comes first. Pushes wait for the tables' copy only (and a push for a
 * tensor not copied yet, for that tensor's copy), not for the whole shard's.
 */
export function startSnapshot(
  shard: Shard,
  file: SnapshotFile,
  buffers: SnapshotBuffers,
  keep?: SliceFilter,
): SnapshotUnderWay {
  const { tensors, ...rest } = snapshotAllButTensors(shard, file, buffers, keep);
  const copies = new TensorCopies(tensors, buffers);
  return {
    tensors: async () => ({ ...rest, tensors: await copies.finish() }),
    cancel: () => copies.drop(),
  };
}

/** A snapshot taken copy-on-write: finish it, or cancel it (its buffers are then free). */
export interface SnapshotUnderWay {
  /** The whole snapshot, once every tensor is copied. */
  tensors(): Promise<ShardSnapshot>;
  /** Gives the snapshot up: no tensor copies itself into its buffers any more. */
  cancel(): void;
}

/** Each tensor copied once: by `finish`, or just before its next write. */
class TensorCopies {
  private readonly copies: (TensorSnapshot | undefined)[];

  constructor(
    private readonly tensors: StoredTensor[],
    private readonly buffers: SnapshotBuffers,
  ) {
    this.copies = tensors.map(() => undefined);
    tensors.forEach((tensor, i) => tensor.copyBeforeWrite(() => this.copy(i)));
  }

  /** Copies the tensors not copied yet, yielding to pushes every few MiB. */
  async finish(): Promise<TensorSnapshot[]> {
    const yieldEvery = 8 << 20;
    let sinceYield = 0;
    try {
      for (let i = 0; i < this.tensors.length; i++) {
        if (this.copies[i]) continue;
        this.tensors[i]!.copyBeforeWrite(undefined);
        sinceYield += this.copy(i);
        if (sinceYield >= yieldEvery) {
          sinceYield = 0;
          await nextTurn();
        }
      }
      return this.copies as TensorSnapshot[];
    } finally {
      this.drop();
    }
  }

  /** No tensor keeps the hook of this snapshot (its buffers may go to another). */
  drop(): void {
    for (const tensor of this.tensors) tensor.copyBeforeWrite(undefined);
  }

  /** Copies tensor `i` (the bytes copied). */
  private copy(i: number): number {
    const copy = this.tensors[i]!.snapshot(this.buffers);
    this.copies[i] = copy;
    return (
      copy.tensor.content.byteLength +
      (copy.state?.slots.reduce((total, slot) => total + slot.content.byteLength, 0) ?? 0)
    );
  }
}

/** The snapshot but for its tensors' copies: the tensors it is to hold, in order. */
function snapshotAllButTensors(
  shard: Shard,
  file: SnapshotFile,
  buffers: SnapshotBuffers,
  keep: SliceFilter | undefined,
): Omit<ShardSnapshot, 'tensors'> & { tensors: StoredTensor[] } {
  const delta = file.parentUuid !== undefined;
  const tables = [...shard.tables.values()].map((table) =>
    snapshotTable(
      table,
      buffers,
      delta,
      keep && ((bucket) => keep.bucket(table.table.name, bucket)),
    ),
  );
  return {
    index: shard.index,
    shardCount: shard.shardCount,
    shardEpoch: file.shardEpoch,
    seq: file.seq,
    uuid: file.uuid,
    ...(delta && { parentUuid: file.parentUuid }),
    blockSize: 0,
    job: '',
    createdUnixNs: nowUnixNs(),
    updatesApplied: shard.updatesApplied,
    tensors: [...shard.tensors.values()].filter((tensor) => !keep || keep.tensor(tensor.name)),
    tables,
    marks: shard.marks.entries(),
    closedSteps: shard.closedSteps,
    marksAhead: shard.ahead.entries(),
  };
}
