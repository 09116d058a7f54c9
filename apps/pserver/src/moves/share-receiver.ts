import fs from 'node:fs/promises';
import path from 'node:path';
import type { LiveMove } from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import type { ForwardRequest__Output, ForwardResponse } from '@pserver/proto';
import { abortableSleep, backoffPolicies, retry } from '@pserver/rpc';
import { fetchCopy } from '../replication/fetch-copy';
import type { PrimaryCalls } from '../replication/replica-follower';
import { PserverError } from '../shard/errors';
import type { Shard } from '../shard/shard';
import { SharePlacement } from '../shard/share-parts';
import { IncomingShare } from './incoming-share';
import type { MoveTarget } from './move-links';

export interface ShareReceiverOptions {
  member: string;
  /** The live change this member receives slices for, if any (one read of etcd). */
  liveMove: () => Promise<LiveMove | undefined>;
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
}

/** One change this member receives slices for. */
interface Receiving {
  move: LiveMove;
  incoming: IncomingShare;
  stopped: AbortController;
  /** When `reshape/live` was last seen for it (performance.now()). */
  seenAt: number;
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
    try {
      return receiving.incoming.merge();
    } catch (err) {
      this.options.logger.warn('the share of the live move is incomplete; restoring it instead', {
        index,
        err,
      });
      receiving.incoming.discard(err);
      return undefined;
    }
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
    const receiving: Receiving = {
      move,
      incoming,
      stopped: new AbortController(),
      seenAt: performance.now(),
    };
    this.receiving = receiving;
    logger.info('receiving slices for a change of the shard count', {
      index: move.index,
      from: move.from,
      to: move.to,
    });
    for (let source = 0; source < move.from; source++)
      void this.copy(receiving, source).catch((err: unknown) => {
        if (!receiving.stopped.signal.aborted)
          logger.warn('copying the slices of an old shard failed; giving the live move up', {
            source,
            err,
          });
        incoming.discard(err);
      });
  }

  /** Copies old shard `source`'s slices, from whichever primary holds it, until loaded. */
  private async copy(receiving: Receiving, source: number): Promise<void> {
    const { signal } = receiving.stopped;
    const { member, primaryCalls, scratchDir, logger } = this.options;
    const { move } = receiving;
    const dir = path.join(scratchDir, String(source));
    let loaded: { calls: PrimaryCalls; seq: number } | undefined;
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
        const { meta, seq } = await fetchCopy(dir, calls.fetchSnapshot, signal);
        const bytes = await receiving.incoming.load(source, dir, meta, seq, primary.epoch);
        await fs.rm(dir, { recursive: true, force: true });
        loaded = { calls, seq };
        logger.info('loaded the slices of an old shard', {
          source,
          index: move.index,
          seq,
          bytes,
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
  }

  private end(reason: unknown): void {
    const current = this.receiving;
    this.receiving = undefined;
    current?.stopped.abort();
    current?.incoming.discard(reason);
  }
}
