import type { CheckpointMeta } from '@pserver/checkpoint';
import type { TensorMemory } from '@pserver/optimizer';
import { restoreShare } from '../persistence/restore-share';
import { replay } from '../replication/replay';
import { PserverError, staleEpoch } from '../shard/errors';
import type { PushRecord } from '../shard/push-record';
import { Shard } from '../shard/shard';
import { mergeParts, partOfShard, type SharePart, type SharePlacement } from '../shard/share-parts';

interface Waiting {
  /** The epoch of the primary that sent it. */
  epoch: number;
  record: PushRecord;
  resolve: (appliedSeq: number) => void;
  reject: (err: unknown) => void;
}

/** One old shard's slices on their way: its copy once loaded, and the forwards waiting for it. */
interface Part {
  shard: Shard | undefined;
  /** The epoch of the primary the copy came from: its forwards only apply on it. */
  epoch: number;
  waiting: Map<number, Waiting>;
}

/**
 * The receiving side of a live move: the slices that index `index` of `placement.to` takes from
 * each old shard, each held as a part restored from a copy of that shard (`load`) and kept up to
 * date by the old shard's pushes, sliced by the sender (`sliceRecord`) and applied strictly in the
 * order of its sequence numbers, as a replica applies its primary's (a forward that arrives early
 * waits for the ones before it; one applied already is answered at once). At the hand-over the
 * parts, with what the receiver holds of its own, become one shard (`merge`): the shard a
 * stop-the-world change would restore from the old shards' final checkpoints.
 */
export class IncomingShare {
  private readonly parts = new Map<number, Part>();
  private ended: unknown;

  constructor(
    readonly placement: SharePlacement,
    readonly index: number,
    private readonly memory: TensorMemory | undefined,
  ) {}

  /** The old shards whose copy is loaded, and the last push of each applied here. */
  applied(): Map<number, number> {
    const applied = new Map<number, number>();
    for (const [source, part] of this.parts)
      if (part.shard) applied.set(source, part.shard.appliedSeq);
    return applied;
  }

  /** Whether old shard `source`'s part is loaded from its primary of `epoch` and holds its push `seq`. */
  holdsThrough(source: number, epoch: number, seq: number): boolean {
    const shard = this.parts.get(source)?.shard;
    return (
      shard !== undefined && this.parts.get(source)!.epoch === epoch && shard.appliedSeq >= seq
    );
  }

  /**
   * Loads old shard `source`'s copy (a checkpoint of it, taken when its push `seq` was its last,
   * by its primary of `epoch`): the slices this index takes of it. Returns the bytes read.
   */
  async load(
    source: number,
    root: string,
    meta: CheckpointMeta,
    seq: number,
    epoch: number,
  ): Promise<number> {
    const { from, to } = this.placement;
    const shard = new Shard(this.index, to, this.memory);
    const { bytes } = await restoreShare(root, { from, sources: new Map([[source, meta]]) }, shard);
    this.throwIfEnded();
    const part = this.partOf(source);
    if (part.shard) release(part.shard);
    // Forwards of another primary than the copy's do not apply on it.
    for (const [seq, waiting] of part.waiting)
      if (waiting.epoch !== epoch) {
        part.waiting.delete(seq);
        waiting.reject(staleEpoch(waiting.epoch, epoch));
      }
    shard.appliedSeq = seq;
    part.shard = shard;
    part.epoch = epoch;
    this.drain(part);
    return bytes;
  }

  /**
   * Applies old shard `source`'s push `seq`, from its primary of `epoch`, in its turn; resolves
   * with the part's last push once it is.
   */
  forward(source: number, epoch: number, seq: number, record: PushRecord): Promise<number> {
    this.throwIfEnded();
    const part = this.partOf(source);
    if (part.shard && epoch !== part.epoch)
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `old shard ${source}: its copy here is of the primary of epoch ${part.epoch}, not ${epoch}`,
      );
    if (part.shard && seq <= part.shard.appliedSeq) return Promise.resolve(part.shard.appliedSeq);
    return new Promise((resolve, reject) => {
      part.waiting
        .get(seq)
        ?.reject(new PserverError('PSERVER_INVALID_ARGUMENT', `forward ${seq}: sent again`));
      part.waiting.set(seq, { epoch, record, resolve, reject });
      this.drain(part);
    });
  }

  /**
   * The hand-over: every part, and `own` (the slices the receiver holds already, when it held an
   * old index), merged into one shard of the new count. The incoming share is spent.
   */
  merge(own: readonly SharePart[] = []): Shard {
    this.throwIfEnded();
    const { from } = this.placement;
    const missing = Array.from({ length: from }, (_, i) => i).filter(
      (i) => !this.parts.get(i)?.shard && !own.some((part) => part.source === i),
    );
    if (missing.length > 0)
      throw new PserverError(
        'PSERVER_NOT_SERVING',
        `index ${this.index}: no copy of old ${missing.length === 1 ? 'shard' : 'shards'} ${missing.join(', ')} yet`,
      );
    const parts = [...this.parts].map(([source, part]) =>
      partOfShard(part.shard!, this.placement, this.index, source),
    );
    const shard = new Shard(this.index, this.placement.to, this.memory);
    mergeParts(
      shard,
      this.placement,
      [...parts, ...own].sort((a, b) => a.source - b.source),
    );
    this.end(new PserverError('PSERVER_NOT_SERVING', 'the move was handed over'), false);
    return shard;
  }

  /** Gives the move up: the parts are released, waiting forwards rejected with `reason`. */
  discard(reason: unknown): void {
    if (this.ended === undefined) this.end(reason, true);
  }

  private end(reason: unknown, releaseParts: boolean): void {
    this.ended = reason;
    for (const part of this.parts.values()) {
      this.rejectWaiting(part, reason);
      if (releaseParts && part.shard) release(part.shard);
    }
    this.parts.clear();
  }

  private rejectWaiting(part: Part, reason: unknown): void {
    for (const waiting of part.waiting.values()) waiting.reject(reason);
    part.waiting.clear();
  }

  private partOf(source: number): Part {
    if (!Number.isInteger(source) || source < 0 || source >= this.placement.from)
      throw new PserverError(
        'PSERVER_INVALID_ARGUMENT',
        `source: an old shard index below ${this.placement.from}, got ${source}`,
      );
    let part = this.parts.get(source);
    if (!part) this.parts.set(source, (part = { shard: undefined, epoch: 0, waiting: new Map() }));
    return part;
  }

  /** Applies every waiting forward of `part` that is next in line. */
  private drain(part: Part): void {
    const shard = part.shard;
    if (!shard) return;
    for (const [seq, waiting] of part.waiting)
      if (seq <= shard.appliedSeq) {
        part.waiting.delete(seq);
        waiting.resolve(shard.appliedSeq);
      }
    for (;;) {
      const next = part.waiting.get(shard.appliedSeq + 1);
      if (!next) return;
      part.waiting.delete(shard.appliedSeq + 1);
      try {
        replay(shard, next.record);
      } catch (err) {
        // The part no longer mirrors its old shard: the move cannot complete from it.
        this.discard(err);
        next.reject(err);
        return;
      }
      next.resolve(shard.appliedSeq);
    }
  }

  private throwIfEnded(): void {
    if (this.ended !== undefined) throw this.ended;
  }
}

function release(shard: Shard): void {
  for (const tensor of shard.tensors.values()) tensor.release();
}
