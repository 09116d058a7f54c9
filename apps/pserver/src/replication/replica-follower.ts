import fs from 'node:fs/promises';
import type { ReplicaTenure } from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import type {
  ForwardRequest__Output,
  ForwardResponse,
  SnapshotChunk__Output,
} from '@pserver/proto';
import { backoffPolicies, retry } from '@pserver/rpc';
import { PserverError, staleEpoch } from '../shard/errors';
import { restoreShard } from '../persistence/restore-shard';
import { Shard } from '../shard/shard';

import { fetchCopy } from './fetch-copy';
import { replay } from './replay';
import { shardDigest } from './shard-digest';

/** What the replica asks of its primary (gRPC in the node, fakes in unit tests). */
export interface PrimaryCalls {
  /** FetchSnapshot: each chunk of the copy, in order. */
  fetchSnapshot(
    onChunk: (chunk: SnapshotChunk__Output) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void>;
  /** ReplicaLoaded: whether the primary counts the replica in sync already. */
  loaded(seq: number, signal: AbortSignal): Promise<boolean>;
}

export interface ReplicaFollowerOptions {
  tenure: ReplicaTenure;
  member: string;
  /** Where the fetched copy is written while it is read (a directory of its own, emptied first). */
  scratchDir: string;
  primary: PrimaryCalls;
  logger: Logger;
  /** A forward the copy cannot take (the replica diverged): the node stops being a replica. */
  onDiverged: (reason: string) => void;
  /** Tests only (the `forward:stall` failpoint): true while forwards are never answered. */
  stalled?: () => boolean;
}

interface Waiting {
  request: ForwardRequest__Output;
  resolve: (reply: ForwardResponse) => void;
  reject: (err: unknown) => void;
}

/**
 * A replica's side of replication: fetches the primary's copy of the shard, loads it, then
 * applies the pushes the primary forwards strictly in the order of their sequence numbers (a
 * forward that arrives early waits for the ones before it; one applied already is answered at
 * once). When the primary says the replica is in sync, it writes that into its key (the
 * tenure's `markInSync`): from then on it may be promoted, with `shard` as the shard it serves.
 */
export class ReplicaFollower {
  private copy: Shard | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private inSyncMarked = false;
  /** Digests compared with the primary's, and how many differed. */
  readonly digests = { checked: 0, mismatched: 0 };
  private inSyncAsked = false;
  private readonly stopped = new AbortController();

  constructor(private readonly options: ReplicaFollowerOptions) {}

  get index(): number {
    return this.options.tenure.index;
  }

  /** The loaded copy (undefined until it is). */
  get shard(): Shard | undefined {
    return this.copy;
  }

  /** Whether etcd says this replica is in sync: it holds every push the primary acknowledged. */
  get inSync(): boolean {
    return this.inSyncMarked;
  }

  /**
   * Whether the copy holds every push the primary acknowledged: the primary said so, and every
   * forward since was applied. The mark in etcd (`inSync`) may still be on its way then: a
   * promotion, which only a marked key allows, can overtake the mark's answer.
   */
  get caughtUp(): boolean {
    return this.copy !== undefined && this.inSyncAsked;
  }

  /** Fetches and loads the copy, retrying until it is loaded or the tenure ends. */
  async join(): Promise<void> {
    const { tenure, logger } = this.options;
    await retry(
      async () => {
        if (tenure.holds()) await this.fetchAndLoad();
      },
      {
        policy: backoffPolicies.replicaJoin,
        signal: this.stopped.signal,
        retryIf: () => tenure.holds(),
        onRetry: ({ error, delayMs }) =>
          logger.warn('joining the primary failed; trying again', {
            err: error,
            backoffMs: delayMs,
          }),
      },
    ).catch(() => undefined); // stopped, or the tenure ended: nothing to join
  }

  /** Forward: applies the push in its turn; answers once it is applied. */
  forward(request: ForwardRequest__Output): Promise<ForwardResponse> {
    const { tenure } = this.options;
    // Never answered: the caller's deadline ends the call (the lag test's replica).
    if (this.options.stalled?.()) return new Promise(() => undefined);
    if (request.index !== tenure.index || !tenure.holds())
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `this pserver does not replicate shard ${request.index}`,
      );
    if (request.primaryEpoch < tenure.primaryEpoch)
      throw staleEpoch(request.primaryEpoch, tenure.primaryEpoch);
    if (request.primaryEpoch > tenure.primaryEpoch)
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `this pserver replicates shard ${request.index} for the primary of epoch ${tenure.primaryEpoch}, not ${request.primaryEpoch}`,
      );
    if (request.inSync) this.noteInSync();
    const copy = this.copy;
    if (copy && request.seq <= copy.appliedSeq)
      return Promise.resolve({ appliedSeq: copy.appliedSeq });
    return new Promise((resolve, reject) => {
      this.waiting
        .get(request.seq)
        ?.reject(
          new PserverError('PSERVER_INVALID_ARGUMENT', `forward ${request.seq}: sent again`),
        );
      this.waiting.set(request.seq, { request, resolve, reject });
      this.drain();
    });
  }

  stop(): void {
    this.stopped.abort();
    for (const w of this.waiting.values())
      w.reject(new PserverError('PSERVER_NOT_REPLICA', 'this replica stopped'));
    this.waiting.clear();
  }

  private async fetchAndLoad(): Promise<void> {
    // Loaded already: only the primary's answer to ReplicaLoaded was lost.
    if (!this.copy) await this.fetchCopy();
    if (await this.options.primary.loaded(this.copy!.appliedSeq, this.stopped.signal))
      this.noteInSync();
  }

  private async fetchCopy(): Promise<void> {
    const { scratchDir, primary, logger, tenure } = this.options;
    const started = performance.now();
    const { meta, seq } = await fetchCopy(
      scratchDir,
      (onChunk, signal) => primary.fetchSnapshot(onChunk, signal),
      this.stopped.signal,
    );
    const shard = new Shard(tenure.index, tenure.shardCount, undefined);
    const read = await restoreShard(scratchDir, meta, shard);
    await fs.rm(scratchDir, { recursive: true, force: true });
    shard.appliedSeq = seq;
    this.copy = shard;
    logger.info("loaded the primary's copy of the shard", {
      index: tenure.index,
      primaryEpoch: tenure.primaryEpoch,
      seq,
      bytes: read.bytes,
      ms: Math.round(performance.now() - started),
    });
    this.drain();
  }

  /** Applies every waiting forward that is next in line. */
  private drain(): void {
    const copy = this.copy;
    if (!copy) return;
    for (const [seq, w] of this.waiting) {
      if (seq <= copy.appliedSeq) {
        this.waiting.delete(seq);
        w.resolve({ appliedSeq: copy.appliedSeq });
      }
    }
    for (;;) {
      const next = this.waiting.get(copy.appliedSeq + 1);
      if (!next) return;
      this.waiting.delete(copy.appliedSeq + 1);
      try {
        replay(copy, next.request);
      } catch (err) {
        next.reject(err);
        this.options.onDiverged(
          `forward ${next.request.seq} (trainer ${next.request.trainerId}, step ${next.request.step}) could not be applied: ${(err as Error).message}`,
        );
        return;
      }
      if (next.request.digest) this.compareDigest(copy, next.request.seq, next.request.digest);
      next.resolve({ appliedSeq: copy.appliedSeq });
    }
  }

  private compareDigest(copy: Shard, seq: number, primary: string): void {
    const mine = shardDigest(copy);
    this.digests.checked++;
    if (mine === primary) return;
    this.digests.mismatched++;
    this.options.logger.error("the replica's copy differs from the primary's shard", {
      index: this.index,
      seq,
      primaryDigest: primary,
      replicaDigest: mine,
    });
  }

  private noteInSync(): void {
    if (this.inSyncAsked) return;
    this.inSyncAsked = true;
    void this.options.tenure.markInSync().then(
      (marked) => {
        this.inSyncMarked = marked;
        if (marked)
          this.options.logger.info('in sync with the primary: promotable', {
            index: this.index,
            primaryEpoch: this.options.tenure.primaryEpoch,
          });
      },
      () => undefined,
    );
  }
}
