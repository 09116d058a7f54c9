import { canonicalMessage } from './canonical-message';
import { readCheckpointChain } from './chain';
import { compareUtf8, DigestWriter } from './digest-writer';
import { CheckpointError } from './errors';
import type { CheckpointMeta } from './meta';
import { RestoredRows } from './restored-rows';
import { tableDigest, type ShardTableState, type TableDigest } from './table-digest';
import { checkUnique, tensorDigest, type TensorDigest } from './tensor-digest';

/** A shard's checkpoint to digest: its meta, and the directory its paths are relative to. */
export interface ShardCheckpoint {
  root: string;
  meta: CheckpointMeta;
}

/** A job's state digest and what it covered. */
export interface JobDigest {
  /** SHA-256 of the job's canonical form, 64 hex digits. */
  digest: string;
  shards: number;
  /** Dense tensor and block records, and their elements. */
  tensors: number;
  elements: number;
  /** Each table's own digest and counts, by name (UTF-8 byte order). */
  tables: TableDigest[];
  /** Rows restored, over every table. */
  rows: number;
}

/** The tag the canonical form starts with: a new form gets a new one. */
export const jobDigestVersion = 'pserver.job-digest.v1';

interface TableParts {
  /** By shard index. */
  shards: (ShardTableState | undefined)[];
  /** Rows and evicted ids the records announce over every chain: the collector's sizes. */
  rows: number;
  evicted: number;
}

/**
 * Digests the whole state of a job from the latest checkpoint of each of its shards (one per
 * shard index, each chain read and verified as restoring it does), in a form that is the same
 * at any shard count: every dense record and every table row, by name and by id, with its
 * optimizer state, and nothing of the shards' own bookkeeping (README.md, "Job digest").
 * Reads each chain once for the dense records and the tables' records, then once per table for
 * its rows, holding one table's rows at a time.
 */
export async function digestJobState(shards: readonly ShardCheckpoint[]): Promise<JobDigest> {
  const shardCount = shards.length;
  if (shardCount === 0)
    throw new CheckpointError('CHECKPOINT_INCOMPATIBLE', 'a job digest needs its shards');
  const byIndex: ShardCheckpoint[] = [];
  for (const shard of shards) {
    const index = shard.meta.index;
    if (!(index >= 0 && index < shardCount) || byIndex[index])
      throw new CheckpointError(
        'CHECKPOINT_INCOMPATIBLE',
        `need one checkpoint of each of the ${shardCount} shards; got shards [${shards.map((s) => s.meta.index).join(', ')}]`,
      );
    byIndex[index] = shard;
  }

  const tensors: TensorDigest[] = [];
  const tables = new Map<string, TableParts>();
  for (const [index, { root, meta }] of byIndex.entries()) {
    let reading = meta.path;
    let last = false;
    await readCheckpointChain(
      root,
      meta,
      {
        file: (position) => {
          reading = position.file.path;
          last = position.last;
        },
        header: (header) => {
          if (header.shardIndex !== index || header.shardCount !== shardCount)
            throw new CheckpointError(
              'CHECKPOINT_INCOMPATIBLE',
              `checkpoint ${reading} holds shard ${header.shardIndex} of ${header.shardCount}, not ${index} of ${shardCount}`,
            );
        },
        // Every file of a chain holds the dense records whole: the last one's are the shard's.
        tensor: (record) => {
          if (last) tensors.push(tensorDigest(record, reading));
        },
        table: (record) => {
          if (!record.spec)
            throw new CheckpointError(
              'CHECKPOINT_CORRUPT',
              `checkpoint ${reading}: a table record without its spec`,
            );
          const name = record.spec.name;
          const parts = tables.get(name) ?? { shards: [], rows: 0, evicted: 0 };
          tables.set(name, parts);
          parts.rows += record.rows;
          parts.evicted += record.evicted;
          // A delta's record replaces the state before it (the reader may reuse its buffers).
          parts.shards[index] = {
            spec: canonicalMessage('TableSpec', record.spec),
            step: record.step,
            pendingIds: Uint8Array.from(record.pendingIds),
            pendingCounts: Uint8Array.from(record.pendingCounts),
          };
        },
      },
      { reuseBuffers: true },
    );
  }
  tensors.sort((a, b) => compareUtf8(a.name, b.name));
  checkUnique(
    tensors.map((t) => t.name),
    'tensor',
  );

  const digests: TableDigest[] = [];
  for (const name of [...tables.keys()].sort(compareUtf8)) {
    const parts = tables.get(name)!;
    const states = checkTableShards(name, parts, shardCount);
    const rows = new RestoredRows(name, parts.rows, parts.evicted);
    for (const [index, { root, meta }] of byIndex.entries()) {
      let file = 0;
      let current = '';
      await readCheckpointChain(
        root,
        meta,
        {
          file: (position) => (file = position.index),
          table: (record) => (current = record.spec?.name ?? ''),
          tableEvictions: (evictions) => {
            if (current === name) rows.addEvictions(evictions.ids, index, file);
          },
          tableRows: (section) => {
            if (current === name) rows.addRows(section, index, file);
          },
        },
        { reuseBuffers: true },
      );
    }
    digests.push(tableDigest(name, states, rows));
  }

  const out = new DigestWriter();
  out.text(jobDigestVersion);
  out.u64(tensors.length);
  for (const tensor of tensors) out.raw(tensor.digest);
  out.u64(digests.length);
  for (const table of digests) out.raw(Buffer.from(table.digest, 'hex'));
  return {
    digest: out.digest().toString('hex'),
    shards: shardCount,
    tensors: tensors.length,
    elements: tensors.reduce((sum, t) => sum + t.elements, 0),
    tables: digests,
    rows: digests.reduce((sum, t) => sum + t.rows, 0),
  };
}

/** Every shard's state of a table: each shard must hold it, all with one spec. */
function checkTableShards(name: string, parts: TableParts, shardCount: number): ShardTableState[] {
  const states: ShardTableState[] = [];
  for (let index = 0; index < shardCount; index++) {
    const state = parts.shards[index];
    if (!state)
      throw new CheckpointError(
        'CHECKPOINT_INCOMPATIBLE',
        `table ${name} is not on shard ${index} (every shard holds every table)`,
      );
    if (!Buffer.from(state.spec).equals(Buffer.from(states[0]?.spec ?? state.spec)))
      throw new CheckpointError(
        'CHECKPOINT_INCOMPATIBLE',
        `table ${name} has another spec on shard ${index} than on shard 0`,
      );
    states.push(state);
  }
  return states;
}
