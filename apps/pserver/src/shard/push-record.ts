import type {
  ClosedStep__Output,
  GradientChunk__Output,
  SparseGrad__Output,
  StepMark__Output,
  TableEvictions__Output,
} from '@pserver/proto';
import type { AppliedPush } from './shard';
import type { StagedPush } from './staged-push';
import { elementTypeOf } from './tensor-bytes';

/**
 * A gradient or a piece of one, as it travels: a unary push's `Tensor` (whole, no offset), a
 * streamed push's `GradientChunk`, a forwarded push's piece or a closed step's mean.
 */
export type GradientPiece = Omit<GradientChunk__Output, 'offset'> & { offset?: number };

/** The pieces of a push as received, in arrival order. */
export interface ReceivedPieces {
  grads: readonly GradientPiece[];
  sparse: readonly SparseGrad__Output[];
}

/**
 * A push applied on a primary, kept to forward to its replicas: the trainer and step, and the
 * gradients' pieces and row slices as they arrived (their bytes copied), the rows its apply
 * evicted, and the marks moved before it. A replica replays it (`replication/replay.ts`).
 */
export interface PushRecord {
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

/**
 * The one way a received push becomes a staged one — a trainer's unary push (`whole`: each
 * gradient complete, at offset 0), a streamed push's chunk, a forwarded push, a closed step's
 * means: the row slices first, then each gradient piece, its name checked by `checkName` (the
 * service's placement check; a forwarded push was checked by its primary) and its declared shape
 * read from the piece at offset 0.
 */
export function stagePieces(
  push: StagedPush,
  pieces: ReceivedPieces,
  whole: boolean,
  checkName: (name: string, field: string) => string = (name) => name,
): void {
  for (const slice of pieces.sparse)
    push.addSparse(slice.table, slice.ids, slice.grads, slice.counts);
  for (const piece of pieces.grads) {
    const name = checkName(piece.name, 'grads.name');
    const offset = whole ? 0 : (piece.offset ?? 0);
    push.add(
      name,
      elementTypeOf(piece.elementType, `gradient ${name}: elementType`),
      offset,
      piece.content,
      offset === 0 ? piece.shape : [],
      whole,
    );
  }
}

/**
 * The record of a push to forward once applied: its pieces with their bytes copied (the data
 * path received them into buffers the push frees when it ends, and a forward may be sent again
 * after that).
 */
export function recordOf(
  trainerId: number,
  step: number,
  pieces: ReceivedPieces,
  whole: boolean,
): PushRecord {
  return {
    trainerId,
    step,
    grads: pieces.grads.map((g) => ({
      name: g.name,
      elementType: g.elementType,
      offset: whole ? 0 : (g.offset ?? 0),
      content: Buffer.from(g.content),
      shape: g.shape,
    })),
    sparse: pieces.sparse.map((slice) => ({
      table: slice.table,
      ids: Buffer.from(slice.ids),
      grads: Buffer.from(slice.grads),
      counts: Buffer.from(slice.counts),
    })),
    evictions: [],
  };
}

/** A push's evictions as a record carries them: int64 LE ids per table. */
export function evictionsOf(applied: AppliedPush): TableEvictions__Output[] {
  return applied.evictions.map(({ table, ids }) => ({
    table,
    ids: Buffer.from(ids.buffer, ids.byteOffset, ids.byteLength),
  }));
}
