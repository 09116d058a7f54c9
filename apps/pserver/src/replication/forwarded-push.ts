import type {
  ClosedStep__Output,
  GradientChunk__Output,
  SparseGrad__Output,
  StepMark__Output,
  TableEvictions__Output,
} from '@pserver/proto';
import { PserverError } from '../shard/errors';
import type { PushResult, Shard } from '../shard/shard';
import { StagedPush } from '../shard/staged-push';
import { elementTypeOf } from '../shard/tensor-bytes';

/**
 * A push as the primary received it, kept to forward to its replicas once applied: the trainer
 * and step, and the gradients' pieces and row slices as they arrived (the request's own buffers,
 * not copies; a unary push's gradient is one piece at offset 0).
 */
export interface ForwardedPush {
  trainerId: number;
  step: number;
  grads: GradientChunk__Output[];
  sparse: SparseGrad__Output[];
  /** The rows the push evicted on the primary (set once it is applied), per table. */
  evictions: TableEvictions__Output[];
  /** SYNC: a closed step (its means in `grads`) rather than a push. */
  closedStep?: ClosedStep__Output | null;
  /** Marks the primary moved without applying anything since its last forward (set first). */
  marks?: StepMark__Output[];
}

/** A push's evictions as the forward carries them: int64 LE ids per table. */
export function evictionsOf(result: PushResult): TableEvictions__Output[] {
  return result.evictions.map(({ table, ids }) => ({
    table,
    ids: Buffer.from(ids.buffer, ids.byteOffset, ids.byteLength),
  }));
}

/**
 * Applies a forwarded push to a replica's shard as the primary applied it: staged the same way
 * (pieces in order), then the same all-or-nothing apply with the same kernels, so both hold the
 * same bytes after it; a closed SYNC step is applied as the primary applied it (`applyStep`). It
 * must be applied: a push the primary applied and the replica cannot is a diverged replica
 * (PSERVER_INVALID_ARGUMENT names why).
 */
export function applyForwarded(shard: Shard, push: ForwardedPush): void {
  for (const mark of push.marks ?? [])
    shard.marks.set(mark.trainerId, mark.step, Number(mark.updatedUnixMs));
  if (push.closedStep) applyClosedStep(shard, push, push.closedStep.contributors);
  else applyPush(shard, push);
}

function applyClosedStep(shard: Shard, step: ForwardedPush, contributors: number[]): void {
  const staged = new StagedPush(
    (name) => shard.tensors.get(name),
    (name) => shard.tables.get(name),
  );
  try {
    for (const mean of step.grads)
      staged.add(
        mean.name,
        elementTypeOf(mean.elementType, `gradient ${mean.name}: elementType`),
        0,
        mean.content,
        mean.shape,
        true,
      );
    const tables = step.sparse.map(({ table: name, ids, grads, counts }) => {
      const table = shard.tables.get(name);
      if (!table)
        throw new PserverError(
          'PSERVER_INVALID_ARGUMENT',
          `forwarded step ${step.step}: no table ${name} on the replica`,
        );
      return { table, ids, grads, counts };
    });
    // applyStep takes the buffers and releases them.
    const means = staged.detach();
    const { skipped } = shard.applyStep(
      step.step,
      means.map(({ tensor, buffer }) => ({ tensor, buffer, weight: 1 })),
      contributors,
      tables,
      replayOf(step.evictions),
    );
    if (skipped.length > 0)
      throw new PserverError(
        'PSERVER_INVALID_ARGUMENT',
        `forwarded step ${step.step}: the means of ${skipped.join(', ')} were not applied here`,
      );
  } finally {
    staged.discard();
  }
}

function applyPush(shard: Shard, push: ForwardedPush): PushResult {
  const staged = new StagedPush(
    (name) => shard.tensors.get(name),
    (name) => shard.tables.get(name),
  );
  try {
    for (const slice of push.sparse)
      staged.addSparse(slice.table, slice.ids, slice.grads, slice.counts);
    for (const piece of push.grads) {
      const { name } = piece;
      staged.add(
        name,
        elementTypeOf(piece.elementType, `gradient ${name}: elementType`),
        piece.offset,
        piece.content,
        piece.offset === 0 ? piece.shape : [],
        false,
      );
    }
    const result = shard.applyPush(push.trainerId, push.step, staged, replayOf(push.evictions));
    if (result.outcome !== 'PUSH_OUTCOME_APPLIED')
      throw new PserverError(
        'PSERVER_INVALID_ARGUMENT',
        `forwarded push of trainer ${push.trainerId} step ${push.step}: the replica holds that step already (its step marks differ from the primary's)`,
      );
    return result;
  } finally {
    staged.discard();
  }
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
