import {
  CheckpointError,
  readCheckpointChain,
  type ChainFile,
  type CheckpointMeta,
  type StepMarkSnapshot,
} from '@pserver/checkpoint';
import type { SliceGroupSnapshot } from '../shard/marks-ahead';
import type { Shard } from '../shard/shard';
import { StoredTensor } from '../shard/stored-tensor';
import { TableRestorer } from './table-checkpoint';

/**
 * Reads the checkpoint `meta` names (its whole chain) into `shard`, replacing what it held and
 * marking it initialized. Throws what `readCheckpointChain` throws (a `ChainFileError` names the
 * file at fault); the shard is left as it was then. A checkpoint of another shard (index or
 * count) is CHECKPOINT_INCOMPATIBLE.
 */
export async function restoreShard(
  root: string,
  meta: CheckpointMeta,
  shard: Shard,
): Promise<{ bytes: number; tensors: number; tables: number }> {
  const tensors: StoredTensor[] = [];
  const tables = new TableRestorer(shard.index, shard.shardCount);
  let marks: StepMarkSnapshot[] = [];
  let closedSteps = 0;
  let ahead: SliceGroupSnapshot[] = [];
  let reading: ChainFile | undefined;
  let last = false;
  try {
    const read = await readCheckpointChain(
      root,
      meta,
      {
        file: (position) => {
          reading = position.file;
          last = position.last;
          tables.startFile(position.index > 0);
        },
        header: (header) => {
          if (header.shardIndex !== shard.index || header.shardCount !== shard.shardCount) {
            throw new CheckpointError(
              'CHECKPOINT_INCOMPATIBLE',
              `checkpoint ${reading?.path} holds shard ${header.shardIndex} of ${header.shardCount}, not ${shard.index} of ${shard.shardCount}`,
            );
          }
        },
        // Tensors and step marks are whole in every file of a chain: the last file's count.
        tensor: (record) => {
          if (last) tensors.push(StoredTensor.restore(record, shard.memory));
        },
        table: (record) => tables.table(record),
        tableEvictions: (evictions) => tables.tableEvictions(evictions),
        tableRows: (rows) => tables.tableRows(rows),
        stepMarks: (entries, closed, groups) => {
          if (!last) return;
          marks = entries;
          closedSteps = closed;
          ahead = groups.map(({ slices, marks: groupMarks }) => ({
            slices,
            marks: groupMarks.map((m) => ({ ...m, updatedUnixMs: Number(m.updatedUnixMs) })),
          }));
        },
      },
      // Each record is copied into the shard's storage inside the visitor.
      { reuseBuffers: true },
    );
    shard.load(tensors, tables.tables, marks, meta.updatesApplied, closedSteps, ahead);
    return { bytes: read.bytes, tensors: tensors.length, tables: tables.tables.length };
  } catch (err) {
    for (const tensor of tensors) tensor.release();
    throw err;
  }
}
