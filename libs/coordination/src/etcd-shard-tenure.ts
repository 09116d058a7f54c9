import type { Etcd3 } from 'etcd3';
import type { CheckpointMeta } from '@pserver/checkpoint';
import type { Logger } from '@pserver/logging';
import { backoffPolicies, retry } from '@pserver/rpc';
import { EtcdMetaStore } from './etcd-meta-store';
import { parseReplica, type ReplicaAssignment } from './job-state';
import type { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import type { CompleteAssignment, PserverMembership } from './membership';
import {
  markRestored,
  readReshapeShare,
  reshapeFilesToKeep,
  type ReshapeShare,
} from './reshape-share';
import {
  encodeFinalSeq,
  encodeMoveDecision,
  parseMoveDecision,
  type MoveDecision,
} from './live-move';
import { parseLiveReshape } from './reshape';
import { TenureBase, TenureLostError } from './shard-tenure';
import { untilEveryIndexPut } from './wait-for-watch';

/** How often a primary reads `reshape/live`: the longest it takes to hear a change was asked. */
const liveReshapePollMs = 250;
/**
 * While the primaries agree on a hand-back, the longest a primary waits to read the others' word
 * again when no put woke it (a watch is what wakes it: this only bounds a missed event).
 */
const agreementPollMs = 50;

/**
 * The tenure of a cluster pserver over one assignment: `assign/<i>` held by this member under its
 * lease, with the epoch, shard count and block size the master wrote. It ends when the lease can
 * no longer be trusted (checked synchronously against the local deadline), when the assignment
 * is deleted or replaced (the watch), when a linearizable read finds it gone (`confirm`, the epoch
 * check), or when a fenced commit fails its compare — whichever comes first, once.
 */
export class EtcdShardTenure extends TenureBase {
  readonly mode = 'cluster';
  private stopWatching: (() => Promise<void>) | undefined;
  private readonly watches = new Set<() => Promise<void>>();
  /** Aborted by `close` (and so when the tenure ends): `announceServing` stops trying. */
  private readonly closed = new AbortController();
  /**
   * The epoch of the index's latest owner that announced serving it (`ckpt/<i>/served`, read
   * once this tenure held the index, so no other owner can announce after it; 0: none): the only
   * owner whose orphaned state (written when it fenced) this one may adopt, for no owner served
   * in between.
   */
  readonly lastServedEpoch: number;

  private constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    assignment: CompleteAssignment,
    store: EtcdMetaStore,
    private readonly lease: LeaseKeeper,
    private readonly membership: PserverMembership,
    private readonly logger: Logger,
    lastServedEpoch: number,
    private readonly share: ReshapeShare | undefined,
  ) {
    super(assignment, store, share?.reshape);
    this.lastServedEpoch = lastServedEpoch;
  }

  /**
   * Takes up an assignment of this member: opens its checkpoint metas (none for an index of a
   * new count: the reshape deleted them) and the reshape it has to restore its share of, and
   * watches it.
   */
  static async open(
    client: Etcd3,
    keys: JobKeys,
    lease: LeaseKeeper,
    membership: PserverMembership,
    assignment: CompleteAssignment,
    logger: Logger,
  ): Promise<EtcdShardTenure> {
    const { index, epoch } = assignment;
    // At once: taking an index up is part of a live move's write pause.
    const [store, lastServed, share] = await Promise.all([
      EtcdMetaStore.open(client, keys, index, epoch, lease),
      client.get(keys.lastServed(index)).string(),
      readReshapeShare(client, keys, index, assignment.shardCount),
    ]);
    const served = Number(lastServed ?? 0);
    const tenure = new EtcdShardTenure(
      client,
      keys,
      assignment,
      store,
      lease,
      membership,
      logger,
      Number.isSafeInteger(served) && served > 0 ? served : 0,
      share,
    );
    lease.onExpired((reason) => tenure.lose(`its lease can no longer be trusted (${reason})`));
    const stop = await membership.watchAssignment(index, epoch, (reason) => tenure.lose(reason));
    if (tenure.lost) await stop();
    else tenure.stopWatching = stop;
    return tenure;
  }

  async confirm(): Promise<boolean> {
    if (!this.holds()) return false;
    if (!(await this.membership.holds(this.index, this.epoch))) {
      this.lose(`assign/${this.index} is no longer held with epoch ${this.epoch}`);
      return false;
    }
    return this.holds();
  }

  /**
   * Retries while etcd does not answer, until etcd takes it or the tenure ends or is closed (a
   * wait between attempts ends at once then); a refused compare ends the tenure.
   */
  async announceServing(): Promise<void> {
    const { signal } = this.closed;
    await retry(
      async () => {
        if (!this.holds()) return;
        if (!(await this.membership.announce({ index: this.index, epoch: this.epoch })))
          this.lose(`assign/${this.index} is no longer held with epoch ${this.epoch}`);
      },
      {
        policy: backoffPolicies.tenureWrite,
        signal,
        onRetry: ({ error }) =>
          this.logger.warn('announcing the served shard failed; retrying', { err: error }),
      },
    ).catch((err: unknown) => {
      if (!signal.aborted) throw err;
    });
  }

  override async markRestored(): Promise<void> {
    this.require();
    if (!this.share) return;
    try {
      await markRestored(
        this.client,
        this.keys,
        this.lease,
        { index: this.index, epoch: this.epoch },
        this.share,
        this.logger,
      );
    } catch (err) {
      if (err instanceof TenureLostError) {
        this.lose(err.reason);
        throw this.lost ?? err;
      }
      throw err;
    }
  }

  override reshapeFilesToKeep(): Promise<readonly CheckpointMeta[]> {
    return reshapeFilesToKeep(this.client, this.keys, this.index);
  }

  /**
   * Calls `listener` with the shard's replicas for this epoch, now and after every change of
   * their keys (and every few seconds: events alone are not trusted), until the returned stop.
   */
  async watchReplicas(
    listener: (replicas: ReplicaAssignment[]) => void,
  ): Promise<() => Promise<void>> {
    const prefix = this.keys.replicaPrefix(this.index);
    let stopped = false;
    let reading = Promise.resolve();
    const relist = (): void => {
      reading = reading.then(async () => {
        if (stopped) return;
        try {
          const { kvs } = await this.client.getAll().prefix(prefix).exec();
          const replicas = kvs
            .flatMap((kv) => parseReplica(this.keys, kv))
            .filter((r) => r.primaryEpoch === this.epoch);
          if (!stopped) listener(replicas);
        } catch (err) {
          this.logger.warn("reading the shard's replicas failed; retrying", { err });
        }
      });
    };
    const watcher = await this.client.watch().prefix(prefix).create();
    watcher.on('data', relist);
    const timer = setInterval(relist, 5_000);
    timer.unref();
    relist();
    const stop = async (): Promise<void> => {
      stopped = true;
      clearInterval(timer);
      this.watches.delete(stop);
      await watcher.cancel().catch(() => undefined);
    };
    // Ends with the tenure, if the holder does not stop it first.
    this.watches.add(stop);
    if (this.lost) await stop();
    return stop;
  }

  /**
   * Deletes a replica key of this shard while this tenure holds it (`assign/<i>` still of this
   * epoch, under this lease) and the key is still the one seen. A primary stops waiting for a
   * replica only after this commits: etcd never lists as a copy one the primary no longer feeds.
   * False when a compare failed (the key changed or went, or the assignment is not this one).
   */
  async dropReplica(replica: ReplicaAssignment): Promise<boolean> {
    this.require();
    const assign = this.keys.assign(this.index);
    const key = this.keys.replica(this.index, replica.member);
    const result = await this.client
      .if(assign, 'Create', '==', this.epoch)
      .and(assign, 'Lease', '==', this.lease.id)
      .and(key, 'Create', '==', replica.createRevision)
      .then(this.client.delete().key(key))
      .commit();
    return result.succeeded;
  }

  /**
   * Calls `listener` once, when the job is asked to change its shard count while it runs
   * (`reshape/live` from this tenure's count, created after revision `after`: one rolled back is
   * not asked again), at once if it already is: this shard is to be handed back (`handBack`),
   * with the change's count and create revision. Read every `liveReshapePollMs` until the tenure ends or is closed —
   * a read, not a watch: a second watch created beside the replicas' on the same client could
   * hold their creation up, and replicas then never hear of the primary.
   */
  async onHandBackAsked(
    listener: (to: number, revision: number) => void,
    after = 0,
  ): Promise<void> {
    const { signal } = this.closed;
    let told = false;
    let reading = false;
    const read = async (): Promise<void> => {
      if (told || reading || signal.aborted) return;
      reading = true;
      try {
        const kv = (await this.client.get(this.keys.liveReshape).exec()).kvs[0];
        if (!kv || told || signal.aborted) return;
        const revision = Number(kv.create_revision);
        const live = parseLiveReshape(kv.value.toString());
        if (live.from !== this.shardCount || revision <= after) return;
        told = true;
        void stop();
        listener(live.to, revision);
      } catch (err) {
        this.logger.warn('reading a change of the shard count asked (reshape/live) failed', {
          err,
        });
      } finally {
        reading = false;
      }
    };
    const timer = setInterval(() => void read(), liveReshapePollMs);
    timer.unref();
    const stop = (): Promise<void> => {
      clearInterval(timer);
      this.watches.delete(stop);
      return Promise.resolve();
    };
    this.watches.add(stop);
    if (signal.aborted) await stop();
    else await read();
  }

  /**
   * SYNC: agrees with the other primaries of this count on the last step they all close before
   * handing their shards back. Puts `mine` (the highest step a push joined here) as
   * `reshape/last-step/<i>` and returns the highest every index of the count put (`agree`).
   * A trainer starts a step only once the one before was acknowledged everywhere, so every shard
   * gets every contribution to the steps through it; the steps after it are left open. Throws
   * when the put did not commit, or when `signal` aborts first.
   */
  async agreeOnLastStep(mine: number, signal: AbortSignal): Promise<number> {
    const steps = await this.agree(this.keys.lastStepPrefix, String(mine), signal);
    return Math.max(...steps.map(Number));
  }

  /**
   * A live move, while the shard serves: agrees with the other primaries of this count that the
   * receivers copied their shards, so that all refuse pushes at once for the hand-back rather
   * than each as soon as its own copies are loaded. Puts `mine` (every receiver the change names
   * loaded this shard's copy) as `reshape/copied/<i>`, and returns true when every index of the
   * count put true (`agreeAll`).
   */
  agreeOnCopies(mine: boolean, signal: AbortSignal): Promise<boolean> {
    return this.agreeAll(this.keys.copiedPrefix, mine, signal);
  }

  /**
   * A live move, once every old index said whether its receivers are ready (`agreeOnCopies`):
   * puts `proposal` as `reshape/decision` unless an old primary put one first, while this tenure
   * holds the index and the change is pending, and returns the decision that stands — every
   * primary follows the same one. Tried again while etcd does not answer (a put that committed
   * unanswered is read back as the decision); with the change gone, or the index no longer this
   * tenure's, the change does not go on here.
   */
  async decideMove(proposal: MoveDecision): Promise<MoveDecision> {
    const key = this.keys.moveDecision;
    const assign = this.keys.assign(this.index);
    return retry(
      async () => {
        this.require();
        const result = await this.client
          .if(key, 'Create', '==', 0)
          .and(assign, 'Create', '==', this.epoch)
          .and(assign, 'Lease', '==', this.lease.id)
          .and(this.keys.liveReshape, 'Create', '>', 0)
          .then(this.client.put(key).value(encodeMoveDecision(proposal)))
          .else(this.client.get(key))
          .commit();
        if (result.succeeded) return proposal;
        const kv = result.responses[0]?.response_range?.kvs[0];
        return (
          (kv && parseMoveDecision(kv.value.toString())) ?? {
            go: false,
            reason: `no decision is left to follow: another old primary's rolled the change back meanwhile, or index ${this.index} is no longer this tenure's`,
            index: this.index,
          }
        );
      },
      {
        policy: backoffPolicies.tenureWrite,
        signal: this.closed.signal,
        retryIf: () => this.holds(),
      },
    );
  }

  /**
   * A live move, once pushes are refused: agrees with the other primaries of this count on
   * whether the receivers hold the whole job. Puts whether they hold this shard (`mine`: every
   * index of the new count has a receiver, each applied this shard's last push, and this shard
   * keeps no replica) as `reshape/caught-up/<i>`, and returns true when every index of the count
   * put true — then no share of the new count needs the final checkpoints, and none is written.
   */
  agreeOnWholeMove(mine: boolean, signal: AbortSignal): Promise<boolean> {
    return this.agreeAll(this.keys.caughtUpPrefix, mine, signal);
  }

  /**
   * Puts `mine` as `<prefix><i>` and returns whether every index of the count put true: false at
   * once for `mine` false (one no is enough), else once every index has put its own. Throws when
   * the put did not commit, or when `signal` aborts first.
   */
  private async agreeAll(prefix: string, mine: boolean, signal: AbortSignal): Promise<boolean> {
    if (!mine) {
      await this.putMine(prefix, 'false');
      return false;
    }
    const all = await this.agree(prefix, 'true', signal);
    return all.every((value) => value === 'true');
  }

  /**
   * Puts `value` as `<prefix><i>` (`putMine`), then reads again at each put under the prefix (a
   * watch; every `agreementPollMs` at the latest) until every index of the count has put one, and
   * returns their values. Part of a hand-back's write pause: waking on the watch, not a timer,
   * takes the last put's turn off it.
   */
  private async agree(prefix: string, value: string, signal: AbortSignal): Promise<string[]> {
    const all = await untilEveryIndexPut(
      this.client,
      this.keys,
      prefix,
      this.shardCount,
      (put) => put,
      { rereadMs: agreementPollMs, signal, first: () => this.putMine(prefix, value) },
    );
    return [...all.values()];
  }

  /** Puts `value` as `<prefix><i>` while this tenure holds the index and the change is pending. */
  private async putMine(prefix: string, value: string): Promise<void> {
    this.require();
    const assign = this.keys.assign(this.index);
    const put = await this.client
      .if(assign, 'Create', '==', this.epoch)
      .and(assign, 'Lease', '==', this.lease.id)
      .and(this.keys.liveReshape, 'Create', '>', 0)
      .then(this.client.put(`${prefix}${this.index}`).value(value))
      .commit();
    if (!put.succeeded)
      throw new Error(
        `${prefix.slice(this.keys.root.length)}${this.index} could not be put: the index or the change is gone`,
      );
  }

  /**
   * Hands the index back for a live reshape, after its final checkpoint committed: deletes
   * `assign/<i>` and the shard's replica keys, marks `reshape/handed-back/<i>` with this epoch and
   * puts `reshape/final-seq/<i>` (the last push, `seq`, and the receivers that applied it), in one
   * transaction that commits only while this tenure holds the index and the request is
   * still pending. The tenure is closed first (its watch would take the deletion for a loss);
   * throws `TenureLostError` when the transaction did not commit.
   */
  async handBack(final: { seq: number; moved: string[] } = { seq: 0, moved: [] }): Promise<void> {
    this.require();
    await this.close();
    const assign = this.keys.assign(this.index);
    const result = await this.client
      .if(assign, 'Create', '==', this.epoch)
      .and(assign, 'Lease', '==', this.lease.id)
      .and(this.keys.liveReshape, 'Create', '>', 0)
      .then(
        this.client.delete().key(assign),
        this.client.delete().prefix(this.keys.replicaPrefix(this.index)),
        this.client.put(this.keys.handedBack(this.index)).value(String(this.epoch)),
        this.client
          .put(this.keys.finalSeq(this.index))
          .value(encodeFinalSeq({ epoch: this.epoch, ...final })),
      )
      .commit();
    if (!result.succeeded) {
      this.lose(`assign/${this.index} with epoch ${this.epoch} could not be handed back`);
      throw this.lost!;
    }
  }

  async close(): Promise<void> {
    this.closed.abort(new Error(`the tenure of shard ${this.index} is closed`));
    const stop = this.stopWatching;
    this.stopWatching = undefined;
    await stop?.().catch(() => undefined);
    await Promise.all([...this.watches].map((s) => s()));
  }

  protected override stillTrusted(): boolean {
    if (this.lease.isValid()) return true;
    // isValid() has told the expiry listeners by now; make sure of it either way.
    this.lose('its lease can no longer be trusted');
    return false;
  }

  protected override ended(): void {
    void this.close();
  }
}
