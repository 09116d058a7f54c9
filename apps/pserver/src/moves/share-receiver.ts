import fs from 'node:fs/promises';
import path from 'node:path';
import type { FinalSeq, LiveMove } from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import type { ForwardRequest__Output, ForwardResponse } from '@pserver/proto';
import { abortableSleep, backoffPolicies, retry } from '@pserver/rpc';
import { fetchCopy } from '../replication/fetch-copy';
import type { PrimaryCalls } from '../replication/replica-follower';
import { PserverError } from '../shard/errors';
import type { Shard } from '../shard/shard';
import { partOfShard, SharePlacement, type MoveTarget } from '../shard/share-parts';
import { IncomingShare } from './incoming-share';

export interface ShareReceiverOptions {
  member: string;
  /** The live change this member receives slices for, if any (one read of etcd). */
  liveMove: () => Promise<LiveMove | undefined>;
  /** Resolves once every old index below `from` was handed back, with each one's last push. */
  handBacks: (from: number, signal: AbortSignal) => Promise<Map<number, FinalSeq>>;
  /** FetchSnapshot and ReplicaLoaded of a move, to an old primary (the node's peer clients). */
  primaryCalls: (
    address: string,
    request: { index: number; primaryEpoch: number; member: string; moveTo: MoveTarget },
  ) => PrimaryCalls;
  /** Where copies are written while they are read (emptied first). */
  scratchDir: string;
  logger: Logger;
  /** How often `reshape/live` is read. */
  pollMs: number;
  /** How long a share nobody took is kept after its change is over. */
  keepMs: number;
  /** One old shard's slices loaded: their bytes, and the time to fetch and load them. */
  onCopied?(bytes: number, seconds: number): void;
  /** A copy began: the size of every old shard's copy for the change so far. */
  onCopying?(shareBytes: number): void;
  /** Tests only (the `forward:stall` failpoint): true while forwards are never answered. */
  stalled?: () => boolean;
}

/** One change this member receives slices for. */
interface Receiving {
  move: LiveMove;
  incoming: IncomingShare;
  /**
   * The old index this member was the primary of when the change began: its slices are not
   * copied, the shard itself is handed over at the hand-back (`keepOwn`).
   */
  own: { index: number; shard?: Shard } | undefined;
  stopped: AbortController;
  /** When `reshape/live` was last seen for it (performance.now()). */
  seenAt: number;
  /** Each old shard being copied (undefined) or copied, from its primary of that epoch. */
  copies: Map<number, number | undefined>;
  /** The size of each old shard's copy (the last copy of each), known as it begins. */
  copyBytes: Map<number, number>;
  /**
   * The share merged already, once every old index was handed back to this member (null: the
   * merge found it incomplete).
   */
  merged?: Shard | null;
}

/**
 * A pserver's receiving side of live moves (a change of the shard count while the job runs): it
 * reads `reshape/live` every `pollMs`, and when the change names this member the receiver of an
 * index of the new count (`reshape/receiver/<k>`), it copies that index's slices from every old
 * primary (FetchSnapshot with `move_to`: a copy of the shard, of which it loads its share) and
 * applies the pushes each one forwards, sliced, in order (`IncomingShare`). When the master then
 * gives it index k of the new count, `take` hands over the share, merged into one shard, in place
 * of restoring it from checkpoints. A share nobody takes is dropped `keepMs` after its change.
 */
export class ShareReceiver {
  private receiving: Receiving | undefined;
  private readonly stopped = new AbortController();

  constructor(private readonly options: ShareReceiverOptions) {}

  /** Reads `reshape/live` every `pollMs` until `stop`. */
  start(): void {
    void this.poll();
  }

  stop(): void {
    this.stopped.abort();
    this.end(new PserverError('PSERVER_SHUTTING_DOWN', 'this pserver is stopping'));
  }

  /** A forward of a live move: applied to the share it is for, in its turn. */
  async forward(request: ForwardRequest__Output): Promise<ForwardResponse> {
    // Never answered: a receiver that cannot catch up (the stuck-move test).
    if (this.options.stalled?.()) return new Promise(() => undefined);
    const receiving = this.receiving;
    const to = request.moveTo;
    if (
      !receiving ||
      !to ||
      to.index !== receiving.move.index ||
      to.shardCount !== receiving.move.to
    )
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `this pserver receives no slices for index ${to?.index} of ${to?.shardCount} shards`,
      );
    const appliedSeq = await receiving.incoming.forward(
      request.index,
      Number(request.primaryEpoch),
      Number(request.seq),
      request,
    );
    return { appliedSeq };
  }

  /**
   * The share of index `index` of `shardCount` shards changed from `from`, merged into one
   * shard, once every old shard's copy is loaded: handed over once (undefined when there is
   * none, or it is incomplete).
   */
  take(index: number, shardCount: number, from: number): Shard | undefined {
    const receiving = this.receiving;
    if (!receiving) return undefined;
    const { move } = receiving;
    if (move.index !== index || move.to !== shardCount || move.from !== from) return undefined;
    this.receiving = undefined;
    receiving.stopped.abort();
    return receiving.merged === undefined ? this.merge(receiving) : (receiving.merged ?? undefined);
  }

  /**
   * The shard this member handed back for the change it receives slices for: the slices it
   * keeps are taken from it, as they are, at `take`.
   */
  keepOwn(shard: Shard): void {
    const own = this.receiving?.own;
    if (this.receiving?.move.from === shard.shardCount && own?.index === shard.index)
      own.shard = shard;
  }

  /**
   * Every part, and the slices this member keeps of its own old shard, merged into one shard;
   * undefined when the share is incomplete (the index is then restored instead).
   */
  private merge(receiving: Receiving): Shard | undefined {
    const { move, own } = receiving;
    try {
      const started = performance.now();
      const placement = new SharePlacement(move.from, move.to);
      const shard = receiving.incoming.merge(
        own?.shard ? [partOfShard(own.shard, placement, move.index, own.index)] : [],
      );
      this.options.logger.info('merged the slices of the live move', {
        index: move.index,
        ms: Math.round(performance.now() - started),
      });
      return shard;
    } catch (err) {
      this.options.logger.warn('the share of the live move is incomplete; restoring it instead', {
        index: move.index,
        err,
      });
      receiving.incoming.discard(err);
      return undefined;
    }
  }

  /**
   * Merges the share as soon as every old index was handed back and each primary named this
   * member among the receivers that applied its last push (which its parts hold): the master is
   * only then changing the count and assigning its indices, so the merge is no longer part of
   * the trainers' write pause. Otherwise `take` merges, or the index is restored.
   */
  private async mergeWhenHandedBack(receiving: Receiving): Promise<void> {
    const { move, stopped, own, incoming } = receiving;
    let finals: Map<number, FinalSeq>;
    try {
      finals = await this.options.handBacks(move.from, stopped.signal);
    } catch (err) {
      if (!stopped.signal.aborted)
        this.options.logger.warn('watching the hand-backs failed; merging at the hand-over', {
          err,
        });
      return;
    }
    if (this.receiving !== receiving) return;
    const holds = [...finals].every(
      ([source, final]) =>
        final.moved.includes(this.options.member) &&
        (source === own?.index
          ? own.shard !== undefined
          : incoming.holdsThrough(source, final.epoch, final.seq)),
    );
    if (holds) receiving.merged = this.merge(receiving) ?? null;
  }

  private async poll(): Promise<void> {
    const { signal } = this.stopped;
    while (!signal.aborted) {
      try {
        await this.check();
      } catch (err) {
        this.options.logger.warn('reading the live change of the shard count failed', { err });
      }
      await abortableSleep(this.options.pollMs, signal).catch(() => undefined);
    }
  }

  private async check(): Promise<void> {
    const move = await this.options.liveMove();
    const current = this.receiving;
    if (move && current?.move.revision === move.revision && current.move.index === move.index) {
      current.seenAt = performance.now();
      // An old shard whose primary changed since its copy (a failover): copy it from the new one.
      for (const [source, epoch] of current.copies) {
        const now = move.primaries.get(source)?.epoch;
        if (epoch !== undefined && now !== undefined && now !== epoch)
          this.startCopy(current, source);
      }
      return;
    }
    if (move) {
      this.end(new PserverError('PSERVER_NOT_REPLICA', 'another change of the shard count began'));
      this.begin(move);
    } else if (current && performance.now() - current.seenAt > this.options.keepMs) {
      this.options.logger.info('dropping the share of a live move nobody took', {
        index: current.move.index,
        to: current.move.to,
      });
      this.end(new PserverError('PSERVER_NOT_REPLICA', 'the change of the shard count is over'));
    }
  }

  private begin(move: LiveMove): void {
    const { logger } = this.options;
    const incoming = new IncomingShare(
      new SharePlacement(move.from, move.to),
      move.index,
      undefined,
    );
    const ownIndex = [...move.primaries].find(([, p]) => p.member === this.options.member)?.[0];
    const receiving: Receiving = {
      move,
      incoming,
      own: ownIndex === undefined ? undefined : { index: ownIndex },
      stopped: new AbortController(),
      seenAt: performance.now(),
      copies: new Map(),
      copyBytes: new Map(),
    };
    this.receiving = receiving;
    logger.info('receiving slices for a change of the shard count', {
      index: move.index,
      from: move.from,
      to: move.to,
    });
    for (let source = 0; source < move.from; source++)
      if (source !== ownIndex) this.startCopy(receiving, source);
    void this.mergeWhenHandedBack(receiving);
  }

  private startCopy(receiving: Receiving, source: number): void {
    receiving.copies.set(source, undefined);
    void this.copy(receiving, source).then(
      (epoch) => receiving.copies.set(source, epoch),
      (err: unknown) => {
        if (!receiving.stopped.signal.aborted)
          this.options.logger.warn(
            'copying the slices of an old shard failed; giving the live move up',
            { source, err },
          );
        receiving.incoming.discard(err);
      },
    );
  }

  /**
   * Copies old shard `source`'s slices, from whichever primary holds it, until loaded; resolves
   * with that primary's epoch.
   */
  private async copy(receiving: Receiving, source: number): Promise<number> {
    const { signal } = receiving.stopped;
    const { member, primaryCalls, scratchDir, logger } = this.options;
    const { move } = receiving;
    const dir = path.join(scratchDir, String(source));
    let loaded: { calls: PrimaryCalls; seq: number; epoch: number } | undefined;
    await retry(
      async () => {
        // The primary of now: one that took the index over since serves the copy in its turn.
        const primary = (await this.options.liveMove())?.primaries.get(source);
        if (!primary)
          throw new PserverError('PSERVER_NOT_REPLICA', `old shard ${source} has no primary now`);
        const started = performance.now();
        const calls = primaryCalls(primary.address, {
          index: source,
          primaryEpoch: primary.epoch,
          member,
          moveTo: { index: move.index, shardCount: move.to },
        });
        const { meta, seq } = await fetchCopy(dir, calls.fetchSnapshot, signal, ({ size }) => {
          receiving.copyBytes.set(source, size);
          const shareBytes = [...receiving.copyBytes.values()].reduce((sum, b) => sum + b, 0);
          this.options.onCopying?.(shareBytes);
        });
        const fetchMs = Math.round(performance.now() - started);
        const bytes = await receiving.incoming.load(source, dir, meta, seq, primary.epoch);
        await fs.rm(dir, { recursive: true, force: true });
        loaded = { calls, seq, epoch: primary.epoch };
        this.options.onCopied?.(bytes, (performance.now() - started) / 1000);
        logger.info('loaded the slices of an old shard', {
          source,
          index: move.index,
          seq,
          bytes,
          // Fetched (written by the primary and streamed), then loaded.
          fetchMs,
          ms: Math.round(performance.now() - started),
        });
      },
      {
        policy: backoffPolicies.replicaJoin,
        signal,
        retryIf: () => !signal.aborted,
        onRetry: ({ error, delayMs }) =>
          logger.warn('copying the slices of an old shard failed; trying again', {
            source,
            err: error,
            backoffMs: delayMs,
          }),
      },
    );
    // The old primary hands its index back once every receiver says it loaded its copy (or a
    // bound passed): a failed call only makes it wait.
    await retry(() => loaded!.calls.loaded(loaded!.seq, signal), {
      policy: backoffPolicies.replicaJoin,
      signal,
      retryIf: () => !signal.aborted,
    }).catch(() => undefined);
    return loaded!.epoch;
  }

  private end(reason: unknown): void {
    const current = this.receiving;
    this.receiving = undefined;
    current?.stopped.abort();
    current?.incoming.discard(reason);
  }
}
