import path from 'node:path';
import { setTimeout } from 'node:timers/promises';
import {
  type ClusterMember,
  describeConsistency,
  EtcdShardTenure,
  type JobConsistency,
  type MoveDecision,
  type ShardTenure,
} from '@pserver/coordination';
import { backoffPolicies, onAbort, retry } from '@pserver/rpc';
import type { Roster } from '../consistency/roster';
import type { ReplicationStatus } from '../metrics';
import { Checkpointer, type RecoveryOutcome } from '../persistence/checkpointer';
import type { HeldState } from '../persistence/leave-state';
import { removeOrphanedStates } from '../persistence/orphaned-state';
import { MoveLinks } from '../moves/move-links';
import { slicerOf } from '../moves/record-slices';
import { ReplicaLinks } from '../replication/replica-links';
import type { ReplicationRole } from '../replication/replication-service';
import { shardDigest } from '../replication/shard-digest';
import { ParameterService } from '../service/parameter-service';
import { AdmissionControl } from '../shard/admission';
import { Shard } from '../shard/shard';
import type { RoleContext } from './role-context';

/** How often the trainer roster is read again even without a change seen (SYNC and SSP). */
const rosterRelistMs = 5_000;
/** How long a hand-back waits for the open SYNC step to close (its trainers' pushes on the way). */
const stepBoundaryWaitMs = 10_000;

/** The job's consistency mode and the trainers a step counts. */
export interface Steps {
  consistency: JobConsistency;
  roster: Roster | undefined;
}

/** The job's mode, as the master fixed it, and its trainers when a step counts them. */
async function readSteps(member: ClusterMember): Promise<Steps> {
  const consistency = await member.jobConsistency();
  const roster =
    consistency.mode === 'async' ? undefined : await member.trainerRoster(rosterRelistMs);
  return { consistency, roster };
}

/**
 * How long a live move's receiver may leave a forwarded push unapplied and still be ready for the
 * hand-back: one that keeps up this closely applies the last push soon after pushes stop (Valkey's
 * atomic slot migration pauses writes once the lag is under 1 MB). A stuck one falls ever behind.
 */
const moveReadyBehindMs = 1_000;
/** How often it reads which receivers the change names meanwhile. */
const receiversReadMs = 100;
/** How long a hand-back waits for a live move's receivers to apply the shard's last push. */
const moveCatchUpMs = 5_000;
/**
 * How long a hand-back waits for the other primaries to say whether the receivers hold their
 * shards (a primary that has not said by then is taken to say no: every shard checkpoints).
 */
const wholeMoveAgreeMs = 3_000;

/** What is served once the shard is ready. */
interface Serving {
  service: ParameterService;
  /** Its replicas (cluster mode). */
  links: ReplicaLinks | undefined;
  /** The receivers of a live move copying it (cluster mode). */
  moves: MoveLinks | undefined;
}

/** Where a primary's shard came from when it needs no recovery. */
export type ShardOrigin = 'promoted' | 'moved';

/**
 * One tenure of a shard, as its primary (or a standalone pserver's): the shard, its checkpointer,
 * the service that serves it and, in a cluster, the links to its replicas. It recovers the shard
 * from its checkpoints (or takes a promoted replica's copy, which holds every acknowledged push),
 * serves it, and `stop` undoes that in reverse: a final checkpoint of what changed, the replica
 * links closed, the tenure given back.
 */
export class PrimaryRole {
  readonly kind = 'primary';
  readonly shard: Shard;
  readonly checkpointer: Checkpointer;
  private serving: Serving | undefined;
  private stopWatchingReplicas: (() => Promise<void>) | undefined;
  private readonly origin: ShardOrigin | undefined;

  constructor(
    readonly tenure: ShardTenure,
    private readonly context: RoleContext,
    /**
     * The shard, recovered already: an in-sync replica's copy (a promotion), or the share a live
     * move's receiver holds (every push of every old shard in it).
     */
    copy?: { shard: Shard; origin: ShardOrigin },
  ) {
    this.origin = copy?.origin;
    this.shard = copy?.shard ?? new Shard(tenure.index, tenure.shardCount, undefined);
    this.checkpointer = this.makeCheckpointer();
  }

  get index(): number {
    return this.tenure.index;
  }

  get epoch(): number {
    return this.tenure.epoch;
  }

  /** The service, once the shard is served. */
  get service(): ParameterService | undefined {
    return this.serving?.service;
  }

  /** Whether the shard is served and initialized: its state is then only dropped by a fence. */
  get initialized(): boolean {
    return this.serving !== undefined && this.shard.initialized;
  }

  /** Calls `listener` when the tenure ends (its lease, its assignment, or a fence). */
  onEnded(listener: (reason: string) => void): void {
    this.tenure.onLost((err) => listener(err.reason));
  }

  /**
   * Recovers the shard from its checkpoints (`Checkpointer.recover`); a promoted replica's copy
   * needs none.
   */
  async recover(
    orphansFrom?: number,
  ): Promise<RecoveryOutcome | { kind: 'promoted' } | { kind: 'moved' }> {
    if (this.origin === 'promoted') return { kind: 'promoted' };
    if (this.origin === 'moved') {
      // Served at once: until it commits (`commitMovedShare`), a restart restores the share from
      // the old shards' last checkpoints — their final ones, unless the receivers held the whole
      // job (then it lacks the pushes since, as a primary without replicas would).
      this.context.metrics.moves.sharesServed.inc();
      this.context.logger.info('took its share from a live move', {
        from: this.tenure.reshape?.from,
        to: this.tenure.shardCount,
        marksAhead: this.shard.ahead.entries().length,
      });
      return { kind: 'moved' };
    }
    const started = performance.now();
    const recovery = await this.checkpointer.recover(orphansFrom);
    // Committed before anything is served: the orphan is not needed again once this serves.
    if (recovery.kind === 'adopted') await this.checkpointer.save('adopted an orphaned state');
    if (recovery.kind === 'reshaped') {
      // This index's share, committed at the new count, is what it restores from from now on.
      await this.checkpointer.save(`restored its share of ${recovery.from} shards`);
      await this.tenure.markRestored();
      const { reshapeRestore } = this.context.metrics;
      reshapeRestore.bytes.inc(recovery.bytes);
      reshapeRestore.seconds.observe((performance.now() - started) / 1000);
    } else if (this.tenure.reshape && recovery.kind === 'restored') {
      // An owner before this one committed the share and stopped before it said so.
      await this.tenure.markRestored();
    }
    return recovery;
  }

  /**
   * Cluster: takes up the tenure the master assigned — recovers the shard, serves it and
   * announces that, then keeps its replica links in step with its replica keys. Resolves early,
   * serving nothing, when the tenure ends on the way (its holders decide what happens next) or
   * when no valid checkpoint is left although some were committed (the index is kept, not
   * served: a spare taking it would only refuse in turn; an operator must act).
   */
  async start(): Promise<void> {
    const { config, logger, failpoint, cluster } = this.context;
    const { tenure } = this;
    if (!cluster || !(tenure instanceof EtcdShardTenure))
      throw new Error('PrimaryRole.start: a cluster role only');
    const { member, address } = cluster;
    const { index, shardCount, blockSize, epoch } = tenure;
    logger.info('assigned a shard', { index, shardCount, blockSize, shardEpoch: epoch });
    // Read while the shard recovers: a moved share is served within a live move's write pause.
    const steps = readSteps(member);
    steps.catch(() => undefined);
    await this.context.checkDirectory(index);
    let recovery: Awaited<ReturnType<PrimaryRole['recover']>>;
    try {
      recovery = await this.recover(tenure.lastServedEpoch);
    } catch (err) {
      // Ended while recovering: the tenure's holders decide what happens next.
      if (tenure.lost) return;
      throw err;
    }
    if (recovery.kind === 'lost' && !config.allowFreshStart) {
      logger.fatal(
        `NOT SERVING shard ${index}: checkpoints were committed but none is valid (unusable: ${recovery.broken.join(', ')}). ` +
          'Restore the files under the checkpoint directory and restart, or restart with --allow-fresh-start.',
        { index, checkpointDir: config.checkpointDir },
      );
      return;
    }
    failpoint?.('after-recovery');
    if (!tenure.holds()) return;
    const [orphansRemoved, { consistency, roster }] = await Promise.all([
      removeOrphanedStates(config.checkpointDir, index, epoch),
      steps,
    ]);
    if (!tenure.holds()) return;
    this.serve({ consistency, roster });
    // Trainers send to the shard once the view says it serves: after recovery, not before.
    await tenure.announceServing();
    if (!tenure.holds()) return;
    if (recovery.kind === 'moved') void this.commitMovedShare();
    // Replicas that ask for a copy before the watch reports them are refused and ask again.
    void this.watchReplicas(tenure).catch((err: unknown) =>
      logger.warn("watching the shard's replicas failed", { err }),
    );
    logger.info('serving', {
      index,
      shardCount,
      shardEpoch: epoch,
      address,
      consistency: describeConsistency(consistency),
      recovered: recovery.kind === 'restored' ? recovery.meta.path : undefined,
      adopted: recovery.kind === 'adopted' ? recovery.orphan.meta.path : undefined,
      reshaped: recovery.kind === 'reshaped' ? { from: recovery.from } : undefined,
      promoted: recovery.kind === 'promoted' ? { appliedSeq: this.shard.appliedSeq } : undefined,
      moved: recovery.kind === 'moved' ? { from: tenure.reshape?.from } : undefined,
      orphansRemoved: orphansRemoved.length > 0 ? orphansRemoved : undefined,
    });
  }

  /**
   * Serves the recovered shard: its service (with replica links in a cluster), its periodic
   * checkpoints, and the process SERVING.
   */
  serve(steps: Steps): ParameterService {
    const { config, logger, metrics } = this.context;
    const { shard, tenure } = this;
    // A cluster shard's replicas, and the receivers of a live move: each push is forwarded to both.
    const cluster = tenure instanceof EtcdShardTenure ? tenure : undefined;
    const peers = cluster && {
      index: shard.index,
      epoch: cluster.epoch,
      appliedSeq: () => shard.appliedSeq,
      forward: this.context.peers.forward,
    };
    const links =
      peers &&
      new ReplicaLinks({
        ...peers,
        logger: logger.child({ component: 'replication' }),
        digest: { everyMs: config.replicaDigestIntervalMs, compute: () => shardDigest(shard) },
        lag: {
          timeoutMs: config.replicaLagTimeoutMs,
          drop: (replica) => cluster!.dropReplica(replica),
        },
      });
    const moves =
      peers &&
      new MoveLinks({
        ...peers,
        slice: slicerOf(shard),
        logger: logger.child({ component: 'move' }),
      });
    const service = new ParameterService({
      shard,
      tenure,
      admission: new AdmissionControl(config.maxPushBytesInFlight),
      checkpointer: this.checkpointer,
      onDuplicatePush: () => metrics.duplicatePushes.inc(),
      onLostContributions: ({ step, trainers }) => {
        metrics.lostContributions.inc(trainers.length);
        logger.warn(
          `step ${step} closed without the contributions of trainers ${trainers.join(', ')}: they finished it before this shard was restored from its checkpoint, and were lost with the crash`,
          { step, trainers },
        );
      },
      maxReplyBytes: config.maxMessageBytes,
      ...steps,
      replication: links && {
        replicate: (seq, record) => {
          moves?.replicate(seq, record);
          return links.replicate(seq, record);
        },
        replicated: () => links.settled(),
        replicas: () => links.describe(),
        receivers: () => moves?.describe() ?? [],
      },
    });
    this.serving = { service, links, moves };
    this.checkpointer.startPeriodic(config.checkpointIntervalMs);
    this.context.setServing(true);
    return service;
  }

  /**
   * Commits the share a live move gave this index, then says the index has its share (the
   * change is over once every index did), trying again until it succeeds or the tenure ends.
   */
  private async commitMovedShare(): Promise<void> {
    const { logger } = this.context;
    await retry(
      async () => {
        await this.checkpointer.save('took its share from a live move');
        await this.tenure.markRestored();
      },
      {
        policy: backoffPolicies.replicaJoin,
        retryIf: () => this.tenure.holds(),
        onRetry: ({ error }) =>
          logger.warn('committing the share of a live move failed; trying again', { err: error }),
      },
    ).catch((err: unknown) =>
      logger.warn('the share of a live move was not committed: the tenure ended', { err }),
    );
  }

  /** Keeps the served shard's replica links in step with its replica keys. */
  private async watchReplicas(tenure: EtcdShardTenure): Promise<void> {
    const links = this.serving?.links;
    if (!links) return;
    const stop = await tenure.watchReplicas((replicas) => links.update(replicas));
    if (this.serving?.links === links) this.stopWatchingReplicas = stop;
    else await stop();
  }

  /** From now on, changes are refused and waits end (a graceful stop begins). */
  beginShutdown(): void {
    this.serving?.service.beginShutdown();
  }

  /**
   * Stops in reverse: periodic checkpoints end and, unless `fenced`, a final checkpoint of a
   * served shard commits what changed since the last; the tenure is given back; the replica links
   * close.
   */
  async stop({ fenced }: { fenced: boolean }): Promise<void> {
    // A shard not served yet (recovering) has nothing acknowledged to keep.
    if (!fenced && this.serving) {
      await this.checkpointer.stop();
      if (this.checkpointer.dirty) await this.checkpointer.save('shutdown');
    }
    await this.tenure.close();
    await this.stopWatchingReplicas?.();
    this.serving?.links?.close();
    this.serving?.moves?.close();
  }

  /**
   * Calls `listener` once when the job asks its primaries to hand their shards back for a change
   * of the shard count while it runs (cluster only).
   */
  onHandBackAsked(listener: (to: number, revision: number) => void, after?: number): void {
    const { tenure } = this;
    if (!(tenure instanceof EtcdShardTenure)) return;
    tenure
      .onHandBackAsked(listener, after)
      .catch((err: unknown) =>
        this.context.logger.warn('watching for a change of the shard count failed', { err }),
      );
  }

  /**
   * Hands the served shard back for a live reshape to `to` shards, once the primaries decided the
   * change goes on (`receiversReady`): changes are refused from now on (trainers wait for the new
   * count and re-run their step), the replica links close, and the index is handed back
   * (`EtcdShardTenure.handBack`) with the receivers of a live move that applied its last push. A
   * final checkpoint commits every push applied first, unless every primary of the job agrees
   * that the receivers hold the whole job (`handsOverWhole`). The shard is not served again by
   * this role. False when the change was rolled back instead: nothing was refused, the forwards
   * stop, and the shard is served on; throws when the hand-back did not commit.
   */
  async handBack(to: number): Promise<boolean> {
    const { tenure } = this;
    if (!(tenure instanceof EtcdShardTenure) || !this.serving)
      throw new Error('PrimaryRole.handBack: only a served cluster shard is handed back');
    const { links, moves } = this.serving;
    const decision = await this.receiversReady(tenure, moves);
    if (!decision.go) {
      moves?.close();
      this.context.setServing(true);
      this.context.metrics.moves.rolledBack.inc();
      this.context.logger.warn(
        `rolled the change of the shard count to ${to} back: ${decision.reason}; serving on at ${tenure.shardCount}`,
        { decidedBy: decision.index },
      );
      return false;
    }
    // The shard's write pause: from refusing pushes to the index handed back.
    const timer = this.context.metrics.handBackSeconds.startTimer();
    await this.atAgreedStepBoundary(this.serving.service, tenure);
    this.context.setServing(false);
    this.checkpointer.stopPeriodic();
    const replicated = (links?.describe().length ?? 0) > 0;
    await this.stopWatchingReplicas?.();
    links?.close();
    // No push is applied from now on (every change is refused): the receivers of a live move
    // that applied the last one hold them all.
    const { moved: receivers, behind } = (await moves?.caughtUp(moveCatchUpMs)) ?? {
      moved: [],
      behind: [],
    };
    moves?.close();
    // A receiver of the change itself keeps the slices that stay here from this shard, as it is.
    const named = await this.context.cluster?.member.liveReceivers().catch((): string[] => []);
    const self = this.context.cluster && named?.includes(this.context.config.member);
    const whole = await this.handsOverWhole(tenure, {
      held:
        !replicated &&
        named?.length === to &&
        named.every((m) => m === this.context.config.member || receivers.includes(m)),
    });
    if (!whole) {
      await this.checkpointer.stop();
      if (this.checkpointer.dirty) await this.checkpointer.save('handing the shard back');
    }
    if (self) this.context.handingBack?.(this.shard);
    await tenure.handBack({
      seq: this.shard.appliedSeq,
      moved: self ? [...receivers, this.context.config.member] : receivers,
    });
    const pauseSeconds = timer({ final_checkpoint: String(!whole) });
    if (receivers.length + behind.length > 0)
      this.context.logger.info('handed the shard back to the receivers of a live move', {
        seq: this.shard.appliedSeq,
        moved: receivers,
        behind,
        finalCheckpoint: !whole,
        pauseMs: Math.round(pauseSeconds * 1000),
      });
    return true;
  }

  /**
   * Whether this hand-back may skip its final checkpoint: every primary of the job says the
   * receivers hold its shard (`held`: each index of the new count has a receiver, each applied
   * the last push, and the shard keeps no replica), within `wholeMoveAgreeMs`
   * (`EtcdShardTenure.agreeOnWholeMove`). Then every index of the new count is served from its
   * receiver's memory and none reads the final checkpoints; the checkpoints that exist stay the
   * fallback should a receiver die before its first commit, which then loses what a primary
   * without replicas loses when it dies: the pushes since its last checkpoint. With replicas, a
   * receiver's death must lose nothing, so a replicated shard always checkpoints.
   */
  private async handsOverWhole(
    tenure: EtcdShardTenure,
    { held }: { held: boolean },
  ): Promise<boolean> {
    try {
      return await tenure.agreeOnWholeMove(held, AbortSignal.timeout(wholeMoveAgreeMs));
    } catch (err) {
      this.context.logger.warn(
        'the primaries did not agree that the receivers hold the whole job: writing a final checkpoint',
        { err },
      );
      return false;
    }
  }

  /**
   * A live move: waits, serving, until every receiver the change names loaded its copy and
   * keeps up with the forwards (`MoveLinks.unready`, `moveReadyBehindMs`), and then until the other
   * primaries say the same of theirs (`EtcdShardTenure.agreeOnCopies`), `--move-ready-timeout-s`
   * at most for both; then the first primary to decide puts whether the change goes on — every
   * receiver of every old index ready — or is rolled back, and every primary follows that
   * (`EtcdShardTenure.decideMove`). The shards of the job then refuse pushes together, or none.
   */
  private async receiversReady(
    tenure: EtcdShardTenure,
    moves: MoveLinks | undefined,
  ): Promise<MoveDecision> {
    const { index } = tenure;
    const member = this.context.cluster?.member;
    if (!moves || !member) return { go: true, reason: '', index };
    const waitMs = this.context.config.moveReadyTimeoutMs;
    const deadline = performance.now() + waitMs;
    let unready: string[];
    for (;;) {
      // This member, a receiver too, takes its own slices from memory: it copies nothing here.
      const named = (await member.liveReceivers().catch((): string[] => [])).filter(
        (name) => name !== this.context.config.member,
      );
      unready = moves.unready(named, moveReadyBehindMs);
      if (unready.length === 0 || performance.now() >= deadline || !this.tenure.holds()) break;
      await setTimeout(receiversReadMs);
    }
    const ready = unready.length === 0;
    const left = AbortSignal.timeout(Math.max(0, Math.round(deadline - performance.now())));
    const agreed = await tenure.agreeOnCopies(ready, left).catch((err: unknown) => {
      this.context.logger.warn(
        'the other primaries did not say whether their receivers are ready',
        { err },
      );
      return false;
    });
    const reason = ready
      ? agreed
        ? ''
        : `the receivers of another old shard were not ready within ${waitMs} ms`
      : `${unready.length === 1 ? 'receiver' : 'receivers'} ${unready.join(', ')} of old shard ${index} did not copy it and catch up within ${waitMs} ms`;
    return tenure.decideMove({ go: agreed, reason, index });
  }

  /**
   * Refuses changes from the step boundary every shard of the job agreed on: at once where pushes
   * apply on arrival; under SYNC once the shard closed the last step the primaries agreed on
   * (`EtcdShardTenure.agreeOnLastStep`; within `stepBoundaryWaitMs`), so that the final
   * checkpoints all end at the same step and no shard waits for contributions that trainers
   * stuck at another shard's boundary cannot send. A later step's contributions (acknowledged,
   * not closed) are handed back open: trainers send them again when the new shards ask.
   */
  private async atAgreedStepBoundary(
    service: ParameterService,
    tenure: EtcdShardTenure,
  ): Promise<void> {
    const mine = service.consistency.holdSteps();
    if (mine !== undefined) {
      const bound = AbortSignal.timeout(stepBoundaryWaitMs);
      try {
        const last = await tenure.agreeOnLastStep(mine, bound);
        await new Promise<void>((resolve, reject) => {
          const unlink = onAbort(bound, (reason) => reject(reason as Error));
          service.consistency.closeThrough(last).then(() => (unlink(), resolve()), reject);
        });
        this.context.logger.info('closed the steps every shard closes before handing back', {
          last,
        });
      } catch (err) {
        this.context.logger.warn(
          `the shards did not agree on and close their last step within ${stepBoundaryWaitMs} ms: handing the shard back with its open step, whose contributions trainers send again when asked`,
          { err },
        );
      }
    }
    this.beginShutdown();
  }

  /**
   * Stops acting on the shard without a checkpoint: its index was assigned anew before it was
   * initialized, so nothing of it needs keeping.
   */
  drop(): void {
    const links = this.serving?.links;
    this.serving = undefined;
    void this.checkpointer.stop();
    links?.close();
    void this.stopWatchingReplicas?.();
  }

  /** Ends the tenure now: every handler requires it before acting. */
  lose(reason: string): void {
    this.tenure.lose(reason);
  }

  /**
   * What a fenced primary leaves for the shard's next owner: an initialized cluster shard, with
   * every push acknowledged in it (a standalone shard has its manifest and no next owner).
   */
  heldState(): HeldState | undefined {
    return this.tenure.mode === 'cluster' && this.initialized
      ? { shard: this.shard, epoch: this.tenure.epoch }
      : undefined;
  }

  /** What the replication calls act on: the served shard with its links. */
  replication(): ReplicationRole {
    const links = this.serving?.links;
    if (!links) return undefined;
    const moves = this.serving?.moves;
    const member = this.context.cluster?.member;
    return {
      kind: 'primary',
      shard: this.shard,
      tenure: this.tenure,
      links,
      checkpointer: this.checkpointer,
      scratchDir: path.join(this.context.config.checkpointDir, '.replication', 'out'),
      moves: moves &&
        member && {
          receiver: async (name, to) => {
            const named = await member.receiverOf(to.index);
            return named?.member === name && named.to === to.shardCount
              ? { address: named.address }
              : undefined;
          },
          startMoving: (receiver) => moves.startMoving(receiver),
          sent: (name, sentBytes, copyBytes) => moves.sent(name, sentBytes, copyBytes),
          loaded: (name) => moves.loaded(name),
        },
    };
  }

  replicationStatus(): ReplicationStatus | undefined {
    const links = this.serving?.links;
    return (
      links && { role: 'primary', appliedSeq: this.shard.appliedSeq, replicas: links.describe() }
    );
  }

  private makeCheckpointer(): Checkpointer {
    const { config, logger, metrics, failpoint } = this.context;
    return new Checkpointer({
      root: config.checkpointDir,
      shard: this.shard,
      tenure: this.tenure,
      retain: config.checkpointRetain,
      deltasPerFull: config.checkpointDeltas,
      logger: logger.child({ component: 'checkpoint' }),
      hook: failpoint && ((point) => void failpoint(point)),
      stepMarkRetentionMs: config.stepMarkRetentionMs,
      onCommitted: (seconds) => metrics.checkpoints.seconds.observe(seconds),
      onFailed: () => metrics.checkpoints.failures.inc(),
      pools: this.context.snapshotPools,
    });
  }
}
