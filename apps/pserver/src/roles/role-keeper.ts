import type { Logger } from '@pserver/logging';
import type { Shard } from '../shard/shard';

/** A role the master gave this member: a shard's primary, or a replica of one. */
export type Assignment<P, R> = { kind: 'primary'; tenure: P } | { kind: 'replica'; tenure: R };

/** What the keeper reads of a primary's tenure. */
export interface PrimaryTenureFacts {
  readonly index: number;
  readonly epoch: number;
  /** The epoch of the owner that announced serving the shard last. */
  readonly lastServedEpoch: number;
}

/** What the keeper reads of a replica's tenure. */
export interface ReplicaTenureFacts {
  readonly replica: { readonly createRevision: number };
}

/** Where roles come from (the cluster member, in etcd). */
export interface RoleSource<P, R> {
  /** Waits until the master gives this member a role, and takes it up. */
  nextRole(signal: AbortSignal): Promise<Assignment<P, R>>;
  /** This member's role now (one read); undefined while it has none. */
  currentRole(): Promise<Assignment<P, R> | undefined>;
  /** Whether this member's lease and registration still hold. */
  isAlive(): boolean;
  /** Says this member no longer serves the shard it announced. */
  withdrawServing(): Promise<void>;
}

/** What the keeper needs of a primary role. */
export interface KeptPrimary {
  readonly kind: 'primary';
  /** Whether the shard is served and initialized: then only a fence ends its state. */
  readonly initialized: boolean;
  /** Recovers and serves the shard; resolves once it serves, or gave up on the way. */
  start(): Promise<void>;
  onEnded(listener: (reason: string) => void): void;
  /**
   * Calls `listener` once when the job asks its primaries to hand their shards back, with the
   * change's revision: one created after `after` (a change rolled back is not asked again).
   */
  onHandBackAsked(listener: (to: number, revision: number) => void, after?: number): void;
  /**
   * The index handed back for a change to `to` shards: true, or false when the change was
   * rolled back (the shard is served on); throws when it could not be handed back.
   */
  handBack(to: number): Promise<boolean>;
  /** Stops acting on the shard without keeping anything of it. */
  drop(): void;
}

/** What the keeper needs of a replica role. */
export interface KeptReplica {
  readonly kind: 'replica';
  readonly index: number;
  readonly primaryEpoch: number;
  /** The replica key's revision: the same key seen again is the same tenure. */
  readonly keyRevision: number;
  /** The copy, when it holds every push the primary acknowledged. */
  readonly caughtUpCopy: Shard | undefined;
  start(): void;
  onEnded(listener: (reason: string) => void): void;
  stop(): void;
}

/** How roles are made (the node's; fakes in unit tests). */
export interface RoleFactory<P, R, Primary extends KeptPrimary, Replica extends KeptReplica> {
  /** A primary of the tenure, from `copy` when it is a promoted replica's. */
  primary(tenure: P, copy: Shard | undefined): Primary;
  replica(tenure: R): Replica;
}

export interface RoleKeeperHooks {
  logger: Logger;
  /** Ends this process's part at once (the node's fence): no role can be trusted any more. */
  fence(reason: string): void;
  /** A role stopped serving without a fence: the process is NOT_SERVING until the next one. */
  notServing(): void;
}

/** How the process's part ends: a graceful stop (a signal, a drain, the job's end), or a fence. */
export type Ending = 'stopping' | 'fenced';

/**
 * The one owner of "which role this pserver holds now". Standalone, one primary for the life of
 * the process (`hold`). In a cluster (`run`): a hot spare until the master gives a role, then the
 * primary of a shard or a replica of one; a replica whose key goes becomes the primary when the
 * master promoted it (serving its copy, which holds every acknowledged push), a replica of
 * another key, or a spare again; a primary whose tenure ends is fenced — unless its shard was
 * never initialized and its lease holds (the master assigned every index anew under a new shard
 * count), when it drops the shard and waits for a role again. A primary asked to hand its shard
 * back (the job changes its shard count while it runs) does so and waits for a role again. Once the process stops or is
 * fenced (`end`), no role is taken up any more.
 */
export class RoleKeeper<
  P extends PrimaryTenureFacts,
  R extends ReplicaTenureFacts,
  Primary extends KeptPrimary,
  Replica extends KeptReplica,
> {
  private role: Primary | Replica | undefined;
  private ending: Ending | undefined;
  private finished = false;
  private cluster:
    { source: RoleSource<P, R>; factory: RoleFactory<P, R, Primary, Replica> } | undefined;

  constructor(
    private readonly hooks: RoleKeeperHooks,
    /** Aborted when the process stops: a spare stops waiting for a role. */
    private readonly signal: AbortSignal,
  ) {}

  /** The role held now; undefined for a spare (or before the first). */
  get current(): Primary | Replica | undefined {
    return this.role;
  }

  /** How the process's part ended, if it did. */
  get ended(): Ending | undefined {
    return this.ending;
  }

  /** Whether the job is finished (FinishJob): a stop then ends this pserver's part for good. */
  get jobFinished(): boolean {
    return this.finished;
  }

  /** Standalone: `role` is this process's, from now to its end. */
  hold(role: Primary): void {
    this.role = role;
  }

  /** Cluster: waits for the first role from `source` and takes it up, made by `factory`. */
  run(source: RoleSource<P, R>, factory: RoleFactory<P, R, Primary, Replica>): Promise<void> {
    this.cluster = { source, factory };
    return this.takeNext(undefined);
  }

  private get source(): RoleSource<P, R> {
    if (!this.cluster) throw new Error('RoleKeeper: not running in a cluster');
    return this.cluster.source;
  }

  private get factory(): RoleFactory<P, R, Primary, Replica> {
    if (!this.cluster) throw new Error('RoleKeeper: not running in a cluster');
    return this.cluster.factory;
  }

  /** The job is finished: the stop that follows is the end of this pserver's part. */
  finishJob(): void {
    this.finished = true;
  }

  /**
   * The process stops or is fenced: no role is taken up from now on. Returns false when it had
   * ended already (the first ending stands).
   */
  end(ending: Ending): boolean {
    if (this.ending) return false;
    this.ending = ending;
    return true;
  }

  /** Waits for a role (a hot spare until one comes) and takes it up. */
  private async takeNext(previous: { index: number; epoch: number } | undefined): Promise<void> {
    this.hooks.logger.info(
      'waiting for a shard index or a replica to keep (a hot spare until then)',
    );
    const next = await this.source.nextRole(this.signal);
    if (next.kind === 'replica') this.follow(next.tenure);
    else await this.serve(next.tenure, previous, undefined);
  }

  /**
   * Takes up a primary's tenure. `previous` is the tenure that just ended, if any: its own
   * assignment is never taken up again.
   */
  private async serve(
    tenure: P,
    previous: { index: number; epoch: number } | undefined,
    copy: Shard | undefined,
  ): Promise<void> {
    if (previous && tenure.index === previous.index && tenure.epoch === previous.epoch) {
      // Still the assignment that was lost (e.g. its watch failed): its shard was dropped, so
      // serving it again under the same epoch could answer for updates it no longer holds.
      this.hooks.fence(`assign/${tenure.index} with epoch ${tenure.epoch} was lost once already`);
      return;
    }
    const primary = this.factory.primary(tenure, copy);
    this.role = primary;
    primary.onEnded((reason) => this.primaryEnded(primary, tenure, reason));
    const started = primary.start();
    this.whenHandBackAsked(primary, tenure, started);
    await started;
  }

  /** Hands the shard back when the job asks, for a change made after revision `after`. */
  private whenHandBackAsked(primary: Primary, tenure: P, started: Promise<void>, after = 0): void {
    primary.onHandBackAsked(
      (to, revision) => void this.handBack(primary, tenure, started, to, revision),
      after,
    );
  }

  /**
   * The job changes its shard count while it runs: once the primary serves, it commits a final
   * checkpoint and hands its index back, and this pserver waits as a spare for a role under the
   * new count (the master gives every index of it anew, each restoring its share). A hand-back
   * that fails fences: the shard's state is left for its next owner.
   */
  private async handBack(
    primary: Primary,
    tenure: P,
    started: Promise<void>,
    to: number,
    revision: number,
  ): Promise<void> {
    await started.catch(() => undefined);
    if (this.ending || this.role !== primary) return;
    const { logger } = this.hooks;
    logger.info('handing the shard back: the job changes its shard count', {
      index: tenure.index,
      to,
    });
    this.hooks.notServing();
    let handedBack: boolean;
    try {
      handedBack = await primary.handBack(to);
    } catch (err) {
      if (this.ending || this.role !== primary) return;
      this.hooks.fence(`handing the shard back failed: ${(err as Error).message}`);
      return;
    }
    if (this.ending || this.role !== primary) return;
    if (!handedBack) {
      // Rolled back: the primary serves on, and hands back for the next change asked.
      this.whenHandBackAsked(primary, tenure, started, revision);
      return;
    }
    this.role = undefined;
    logger.info('handed the shard back', { index: tenure.index, shardEpoch: tenure.epoch });
    try {
      await this.source.withdrawServing().catch(() => undefined);
      await this.takeNext(tenure);
    } catch (err) {
      if (this.ending) return;
      logger.fatal('waiting for a shard index again failed', { err });
      this.hooks.fence(`waiting for a shard index again failed: ${(err as Error).message}`);
    }
  }

  /**
   * The primary's tenure ended. Lease gone, or a shard that was initialized: fence (a fresh
   * process recovers the shard from its checkpoint). Otherwise the master assigned the index
   * anew (a new shard count before initialization): drop the shard and wait for a role again
   * under the same registration.
   */
  private primaryEnded(primary: Primary, tenure: P, reason: string): void {
    if (this.ending || this.role !== primary) return;
    if (!this.source.isAlive() || primary.initialized) {
      this.hooks.fence(reason);
      return;
    }
    const { logger } = this.hooks;
    logger.warn('the shard was re-assigned before initialization; waiting for an index again', {
      reason,
    });
    this.hooks.notServing();
    this.role = undefined;
    primary.drop();
    void this.source
      .withdrawServing()
      .catch(() => undefined)
      .then(() => this.takeNext(tenure))
      .catch((cause: unknown) => {
        if (this.ending) return;
        logger.fatal('waiting for a shard index again failed', { err: cause });
        this.hooks.fence(`waiting for a shard index again failed: ${(cause as Error).message}`);
      });
  }

  /** Keeps a copy of a shard for its primary until the replica key goes. */
  private follow(tenure: R): void {
    const replica = this.factory.replica(tenure);
    this.role = replica;
    replica.onEnded((reason) => void this.replicaEnded(replica, reason));
    replica.start();
  }

  /**
   * The replica key went. Promoted (the master promotes only a key marked in sync) and no one
   * announced serving the shard after the copy's primary (one that never announced took no
   * push): the copy holds every acknowledged push, and is served. Otherwise the next role is
   * taken up, and the copy dropped.
   */
  private async replicaEnded(replica: Replica, reason: string): Promise<void> {
    if (this.ending || this.role !== replica) return;
    if (!this.source.isAlive()) return this.hooks.fence(reason);
    try {
      const next = await this.source.currentRole();
      replica.stop();
      this.role = undefined;
      if (next?.kind === 'primary') {
        const promoted =
          next.tenure.index === replica.index &&
          next.tenure.lastServedEpoch <= replica.primaryEpoch;
        await this.serve(next.tenure, undefined, promoted ? replica.caughtUpCopy : undefined);
      } else if (next?.kind === 'replica') {
        if (next.tenure.replica.createRevision === replica.keyRevision)
          return this.hooks.fence(
            `the replica's watch ended while it is still a replica (${reason})`,
          );
        this.follow(next.tenure);
      } else {
        this.hooks.logger.info('no longer a replica; dropping the copy', { reason });
        await this.takeNext(undefined);
      }
    } catch (err) {
      if (this.ending) return;
      this.hooks.logger.fatal('taking up the next role failed', { err });
      this.hooks.fence(`taking up the next role failed: ${(err as Error).message}`);
    }
  }
}
