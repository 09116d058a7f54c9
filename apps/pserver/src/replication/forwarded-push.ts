import type {
  GradientChunk__Output,
  SparseGrad__Output,
  TableEvictions__Output,
} from '@pserver/proto';
import { PserverError } from '../service/errors';
import type { PushResult, Shard } from '../service/shard';
import { StagedPush } from '../service/staged-push';
import { elementTypeOf } from '../service/tensor-bytes';

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
 * same bytes after it. It must be applied: a push the primary applied and the replica cannot is
 * a diverged replica (PSERVER_INVALID_ARGUMENT names why).
 */
export function applyForwarded(shard: Shard, push: ForwardedPush): PushResult {
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
    const replay = new Map<string, Uint32Array>();
    for (const { table, ids } of push.evictions) {
      const copy = new Uint8Array(ids.byteLength);
      copy.set(ids);
      replay.set(table, new Uint32Array(copy.buffer));
    }
    const result = shard.applyPush(push.trainerId, push.step, staged, replay);
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
