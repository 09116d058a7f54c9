import { nowUnixNs, type ShardSnapshot, type SnapshotBuffers } from '@pserver/checkpoint';
import type { Shard } from '../shard/shard';
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
    tensors: [...shard.tensors.values()]
      .filter((tensor) => !keep || keep.tensor(tensor.name))
      .map((tensor) => tensor.snapshot(buffers)),
    tables,
    marks: shard.marks.entries(),
    closedSteps: shard.closedSteps,
    marksAhead: shard.ahead.entries(),
  };
}
