import type { TableEvictions__Output } from '@pserver/proto';
import { PserverError } from '../shard/errors';
import { fateOf } from '../shard/push-fate';
import { stagePieces, type PushRecord } from '../shard/push-record';
import type { Shard } from '../shard/shard';
import { StagedPush } from '../shard/staged-push';

/**
 * Applies a forwarded push to a replica's shard as the primary applied it: staged the same way,
 * then the same all-or-nothing apply with the same kernels, so both hold the same bytes after it;
 * a closed SYNC step is applied as the primary applied it (`applyStep`). It must be applied: a
 * push the primary applied and the replica cannot (its fate here is not `apply`, or its bytes do
 * not fit) is a diverged replica (PSERVER_INVALID_ARGUMENT names why).
 */
export function replay(shard: Shard, record: PushRecord): void {
  for (const mark of record.marks ?? [])
    shard.markStep(mark.trainerId, mark.step, Number(mark.updatedUnixMs));
  if (record.closedStep) replayClosedStep(shard, record, record.closedStep.contributors);
  else replayPush(shard, record);
}

function replayClosedStep(shard: Shard, record: PushRecord, contributors: number[]): void {
  const staged = stagingOf(shard);
  try {
    stagePieces(staged, { grads: record.grads, sparse: [] }, true);
    const tables = record.sparse.map(({ table: name, ids, grads, counts }) => {
      const table = shard.tables.get(name);
      if (!table)
        throw new PserverError(
          'PSERVER_INVALID_ARGUMENT',
          `forwarded step ${record.step}: no table ${name} on the replica`,
        );
      return { table, ids, grads, counts };
    });
    // applyStep takes the buffers and releases them.
    const { skipped } = shard.applyStep(
      record.step,
      staged.detach(),
      contributors,
      tables,
      replayOf(record.evictions),
    );
    if (skipped.length > 0)
      throw new PserverError(
        'PSERVER_INVALID_ARGUMENT',
        `forwarded step ${record.step}: the means of ${skipped.join(', ')} were not applied here`,
      );
  } finally {
    staged.discard();
  }
}

function replayPush(shard: Shard, record: PushRecord): void {
  const { trainerId, step } = record;
  const fate = fateOf(step, shard.marks.lastStep(trainerId));
  if (fate.kind !== 'apply')
    throw new PserverError(
      'PSERVER_INVALID_ARGUMENT',
      `forwarded push of trainer ${trainerId} step ${step}: the replica holds that step already (its step marks differ from the primary's)`,
    );
  const staged = stagingOf(shard);
  try {
    stagePieces(staged, record, false);
    shard.applyPush(trainerId, step, staged, replayOf(record.evictions));
  } finally {
    staged.discard();
  }
}

function stagingOf(shard: Shard): StagedPush {
  return new StagedPush(
    (name) => shard.tensors.get(name),
    (name) => shard.tables.get(name),
  );
}

/** The primary's evictions, per table, as the shard replays them: (low, high) id pairs. */
function replayOf(evictions: readonly TableEvictions__Output[]): Map<string, Uint32Array> {
  const replay = new Map<string, Uint32Array>();
  for (const { table, ids } of evictions) {
    const copy = new Uint8Array(ids.byteLength);
    copy.set(ids);
    replay.set(table, new Uint32Array(copy.buffer));
  }
  return replay;
}
