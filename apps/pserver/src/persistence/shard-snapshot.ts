import {
  nowUnixNs,
  type ShardSnapshot,
  type SnapshotBuffers,
  type TableSnapshot,
  type TensorSnapshot,
} from '@pserver/checkpoint';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Shard } from '../shard/shard';
import type { StoredTensor } from '../shard/stored-tensor';
import type { SliceFilter } from '../shard/share-parts';
import type { ShardTable } from '../shard/table-spec';
import { snapshotTable, startTableSnapshot, type TableSnapshotUnderWay } from './table-checkpoint';

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
  const { tensors, tables, ...rest } = snapshotParts(shard, file, keep);
  const delta = file.parentUuid !== undefined;
  return {
    ...rest,
    tables: tables.map(({ table, keepBucket }) => snapshotTable(table, buffers, delta, keepBucket)),
    tensors: tensors.map((tensor) => tensor.snapshot(buffers)),
  };
}

/**
 * The same snapshot as `snapshotShard`, of the shard as it is now, taken copy-on-write: its
 * step marks and table states are copied now, synchronously; each tensor is copied a few MiB per
 * turn of the event loop, or just before an update or a release changes it; each table's rows
 * a chunk of its arena at a time, a push keeping the rows it changes first (a delta's changed
 * rows, few by choice, are copied now). Pushes wait only for the copy of what they change
 * first, not for the shard's.
 */
export function startSnapshot(
  shard: Shard,
  file: SnapshotFile,
  buffers: SnapshotBuffers,
  keep?: SliceFilter,
): SnapshotUnderWay {
  const { tensors, tables, ...rest } = snapshotParts(shard, file, keep);
  const delta = file.parentUuid !== undefined;
  const tableCopies: TableSnapshotUnderWay[] = [];
  let tensorCopies: TensorCopies | undefined;
  const cancel = (): void => {
    tensorCopies?.drop();
    for (const copy of tableCopies) copy.cancel();
  };
  try {
    for (const { table, keepBucket } of tables)
      tableCopies.push(startTableSnapshot(table, buffers, delta, keepBucket));
    tensorCopies = new TensorCopies(tensors, buffers);
  } catch (err) {
    cancel();
    throw err;
  }
  const copies = tensorCopies;
  return {
    finish: async () => {
      try {
        const tensorSnapshots = await copies.finish();
        const tableSnapshots: TableSnapshot[] = [];
        for (const copy of tableCopies) tableSnapshots.push(await copy.finish());
        return { ...rest, tensors: tensorSnapshots, tables: tableSnapshots };
      } catch (err) {
        cancel();
        throw err;
      }
    },
    cancel,
  };
}

/** A snapshot taken copy-on-write: finish it, or cancel it (its buffers are then free). */
export interface SnapshotUnderWay {
  /** The whole snapshot, once every tensor and table is copied. */
  finish(): Promise<ShardSnapshot>;
  /** Gives the snapshot up: nothing copies itself into its buffers any more. */
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

/** The snapshot but for its tensors' and tables' copies: the tensors and tables it is to hold. */
function snapshotParts(
  shard: Shard,
  file: SnapshotFile,
  keep: SliceFilter | undefined,
): Omit<ShardSnapshot, 'tensors' | 'tables'> & {
  tensors: StoredTensor[];
  tables: { table: ShardTable; keepBucket?: (bucket: number) => boolean }[];
} {
  return {
    index: shard.index,
    shardCount: shard.shardCount,
    shardEpoch: file.shardEpoch,
    seq: file.seq,
    uuid: file.uuid,
    ...(file.parentUuid !== undefined && { parentUuid: file.parentUuid }),
    blockSize: 0,
    job: '',
    createdUnixNs: nowUnixNs(),
    updatesApplied: shard.updatesApplied,
    tensors: [...shard.tensors.values()].filter((tensor) => !keep || keep.tensor(tensor.name)),
    tables: [...shard.tables.values()].map((table) => ({
      table,
      ...(keep && { keepBucket: (bucket: number) => keep.bucket(table.table.name, bucket) }),
    })),
    marks: shard.marks.entries(),
    closedSteps: shard.closedSteps,
    marksAhead: shard.ahead.entries(),
  };
}
