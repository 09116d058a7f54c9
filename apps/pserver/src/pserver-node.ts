import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Server, UntypedServiceImplementation } from '@grpc/grpc-js';

import { checkCheckpointDirectories, SnapshotBuffers } from '@pserver/checkpoint';
import {
  ClusterMember,
  describeConsistency,
  StandaloneTenure,
  type EtcdShardTenure,
  type JobConsistency,
  type ReplicaTenure,
  type ShardTenure,
  type TenureLostError,
} from '@pserver/coordination';
import type { LogFields, Logger } from '@pserver/logging';
import type { DrainResponse } from '@pserver/proto';
import {
  addReflection,
  bindServer,
  CallMetrics,
  callMetricsInterceptor,
  createGrpcServer,
  HealthService,
  loadServerSecurity,
  type ServerSecurity,
  parameterServerService,
  replicationService,
  clientChannelOptions,
  serveMetrics,
  serviceNames,
  shutdownServer,
  type MetricsServer,
} from '@pserver/rpc';
import type { PserverConfig } from './config';
import { failpointHook } from './failpoint';
import { pserverMetrics, type ReplicationStatus } from './metrics';
import { AdmissionControl } from './shard/admission';
import { Checkpointer } from './persistence/checkpointer';
import { FixedRoster, type Roster } from './consistency/roster';
import { removeOrphanedStates, writeOrphanedState } from './persistence/orphaned-state';
import { PserverError } from './shard/errors';
import { ParameterService } from './service/parameter-service';
import { Shard } from './shard/shard';
import { PeerClients, peerSecurity } from './replication/peer-calls';
import { ReplicaFollower } from './replication/replica-follower';
import { ReplicaLinks } from './replication/replica-links';
import { shardDigest } from './replication/shard-digest';
import { ReplicationService, type ReplicationRole } from './replication/replication-service';
import { dataPathMethods } from './transport/direct/data-path';
import { parameterServerHandlers } from './transport/parameter-server-handlers';
import { replicationHandlers } from './transport/replication-handlers';
import { snapshotShard } from './persistence/shard-snapshot';

/** Exit codes a supervisor can tell apart. */
export const exitCodes = {
  /** Standalone: stopped. Cluster: the job is finished (FinishJob) and this pserver's part done. */
  ok: 0,
  failure: 1,
  /** Standalone: checkpoints were committed once and none is valid now (see --allow-fresh-start). */
  checkpointsLost: 3,
  /** Cluster: this pserver can no longer trust its lease or was replaced; start it again. */
  fenced: 4,
  /**
   * The checkpoint directory (or this shard's in it) is not this process's own or is writable by
   * others: whoever can write there can replace the shard it restores. The message says how to
   * fix it; starting again without fixing it fails the same way.
   */
  checkpointDirectoryUnsafe: 5,
  /**
   * Cluster: stopped before the job finished (SIGTERM, SIGINT, a Drain), after handing its role
   * over — a final checkpoint, its lease revoked. Not 0, which a Kubernetes Job counts as a pod
   * done: a supervisor that keeps the job running starts another pserver in its place.
   */
  stoppedEarly: 75,
} as const;

/** Thrown by `start` when the pserver must not serve. */
export class RefusedToStart extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/**
 * How long a fenced pserver lets calls in flight answer (PSERVER_FENCED) before it exits: long
 * enough for a handler to reach its next tenure check, short enough that nothing else happens.
 */
const fencedAnswerGraceMs = 150;

/** How often the trainer roster is read again even without a change seen (SYNC and SSP). */
const rosterRelistMs = 5_000;

/** The shard being served, once it is ready. */
interface Serving {
  shard: Shard;
  service: ParameterService;
  checkpointer: Checkpointer;
  tenure: ShardTenure;
  /** Its replicas (cluster mode). */
  links?: ReplicaLinks;
  stopWatchingReplicas?: () => Promise<void>;
}

/** The shard this pserver keeps a copy of for its primary. */
interface Following {
  tenure: ReplicaTenure;
  follower: ReplicaFollower;
}

/**
 * The pserver process. Standalone: shard --index of --shards, its manifest in the checkpoint
 * directory. Cluster: registers in etcd, waits (as a hot spare) for the master to assign an
 * index, recovers that shard from the checkpoint metas in etcd, announces that it serves it, and
 * serves it while its tenure (`ShardTenure`) holds. When the tenure ends it fences itself: calls
 * in flight are answered PSERVER_FENCED, then it exits 4 — or, when its lease still holds and
 * the shard was never initialized (the master re-assigned every index under a new shard count),
 * it drops the shard and waits for an index again.
 */
export class PserverNode {
  private readonly health = new HealthService([serviceNames.parameterServer]);
  private readonly server: Server;
  private readonly abort = new AbortController();
  private serving: Serving | undefined;
  private following: Following | undefined;
  private readonly peers: PeerClients;
  /** The tenure being recovered or served. */
  private tenure: ShardTenure | undefined;
  private port: number | undefined;
  private member: ClusterMember | undefined;
  private fenced = false;
  private stopping = false;
  /** Asks the process to stop as on SIGTERM (main's handler), with the reason. */
  private stopRequested: (reason: string) => void = () => undefined;
  /** Cluster: the job is finished (FinishJob). */
  private jobDone = false;
  private readonly metrics = pserverMetrics({
    status: () => this.serving?.service.getShardStatus(),
    leaseValidUntil: () => this.member?.leaseValidUntil,
    replication: () => this.replicationStatus(),
    parked: () => {
      const parked = this.serving?.service.consistency.parked;
      return parked && { calls: parked.size, waitedSeconds: parked.waitedSeconds };
    },
  });
  private metricsServer: MetricsServer | undefined;
  /** Warnings about the checkpoint directory already logged (cluster mode checks it twice). */
  private readonly directoryWarnings = new Set<string>();
  private readonly security: ServerSecurity;
  private readonly failpoint: ReturnType<typeof failpointHook>;

  constructor(
    private readonly config: PserverConfig,
    private readonly logger: Logger,
    /** Called when the process must end now (fenced), with the exit code. */
    private readonly onFatal: (code: number) => void = (code) => process.exit(code),
  ) {
    this.security = loadServerSecurity(config.security, config.host, logger);
    this.failpoint = failpointHook(config.failpoint, logger);
    const callMetrics = new CallMetrics(this.metrics.registry);
    this.server = createGrpcServer({
      maxMessageBytes: config.maxMessageBytes,
      flowControlWindowBytes: config.flowControlWindowBytes,
      // The last interceptor sees a call first: access is checked before anything is counted.
      interceptors: [callMetricsInterceptor(callMetrics), ...this.security.interceptors],
      direct:
        config.dataPath === 'direct'
          ? {
              methods: dataPathMethods(() => this.requireService()),
              metrics: callMetrics,
              access: this.security.access,
              logger,
            }
          : undefined,
    });
    const handlers = parameterServerHandlers(
      () => this.requireService(),
      () => this.drain(),
      logger,
    );
    this.server.addService(
      parameterServerService,
      handlers as unknown as UntypedServiceImplementation,
    );
    const replication = new ReplicationService(() => this.replicationRole());
    this.server.addService(
      replicationService,
      replicationHandlers(replication, logger) as unknown as UntypedServiceImplementation,
    );
    this.peers = new PeerClients(
      peerSecurity(config.security),
      clientChannelOptions({
        maxMessageBytes: config.maxMessageBytes,
        flowControlWindowBytes: config.flowControlWindowBytes,
      }) as Record<string, number>,
    );
    this.health.addTo(this.server);
    addReflection(this.server, [serviceNames.parameterServer]);
  }

  /** What every log line carries: the component, and the shard and epoch while serving one. */
  logContext(): LogFields {
    const serving = this.serving;
    return serving
      ? { component: 'node', index: serving.shard.index, shardEpoch: serving.tenure.epoch }
      : { component: 'node' };
  }

  /** The bound address, once started. */
  get address(): string {
    if (this.port === undefined) throw new Error('PserverNode: not started');
    return `${this.config.host}:${this.port}`;
  }

  async start(): Promise<void> {
    const { metricsPort, host } = this.config;
    if (metricsPort !== undefined) {
      // Served from the start: a spare waiting for an index is observable too.
      this.metricsServer = await serveMetrics(this.metrics.registry, host, metricsPort);
      this.logger.info('metrics listening', { address: this.metricsServer.address });
    }
    this.logger.info('security', { grpc: this.security.description });
    for (const warning of this.security.warnings) this.logger.warn(warning);
    try {
      if (this.config.etcdEndpoints) await this.startCluster(this.config.etcdEndpoints);
      else await this.startStandalone();
    } catch (err) {
      // Fenced while starting: the fence ends the process (exit 4) once calls in flight answered.
      if (this.fenced) return;
      throw err;
    }
  }

  /** The exit code after `stop()`: 0 standalone or once the job is finished, else stoppedEarly. */
  get stopExitCode(): number {
    return this.member && !this.jobDone ? exitCodes.stoppedEarly : exitCodes.ok;
  }

  /**
   * How the process is asked to stop from within (a drain, the job finished): it stops as on
   * SIGTERM.
   */
  onStopRequested(listener: (reason: string) => void): void {
    this.stopRequested = listener;
  }

  /**
   * Drain: answers with what it hands over, then stops as on SIGTERM — a final checkpoint of the
   * shard it serves, its lease revoked — so that the master gives the index to a spare at once.
   */
  private drain(): DrainResponse {
    if (!this.member)
      throw new PserverError(
        'PSERVER_CANNOT_DRAIN',
        'Drain: a standalone pserver has no master to give its shard to another; stop it with SIGTERM (a final checkpoint is committed) and start it again',
      );
    const serving = this.serving;
    this.logger.info('drain requested: handing over and stopping', {
      index: serving?.shard.index,
    });
    setImmediate(() => this.stopRequested('drained'));
    return serving
      ? { index: serving.shard.index, shardEpoch: serving.tenure.epoch }
      : { shardEpoch: 0 };
  }

  /**
   * NOT_SERVING; refuse changes; let calls in flight finish (up to the grace period); commit a
   * final checkpoint if the shard changed; in cluster mode revoke the lease, so the index frees at
   * once.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.health.setAll('NOT_SERVING');
    this.abort.abort(new Error('stopping'));
    this.serving?.service.beginShutdown();
    const graceful = await shutdownServer(this.server, this.config.shutdownGraceMs);
    const checkpointer = this.serving?.checkpointer;
    if (checkpointer && !this.fenced) {
      await checkpointer.stop();
      if (checkpointer.dirty) await checkpointer.save('shutdown');
    }
    await this.tenure?.close();
    await this.serving?.stopWatchingReplicas?.();
    this.serving?.links?.close();
    this.following?.follower.stop();
    await this.following?.tenure.close();
    this.peers.close();
    await this.member
      ?.leave()
      .catch((err: unknown) => this.logger.warn('revoking the lease failed', { err }));
    await this.metricsServer?.close();
    this.logger.info('stopped', { graceful });
  }

  private async startStandalone(): Promise<void> {
    const { config } = this;
    await this.checkCheckpointDirectory(config.index);
    // Opening the manifest raises the standalone epoch, durably, before anything is served.
    const tenure = await StandaloneTenure.open(config.checkpointDir, config.index, config.shards);
    this.tenure = tenure;
    tenure.onLost((err) => this.fence(err.reason));
    const shard = new Shard(tenure.index, tenure.shardCount, undefined);
    const checkpointer = this.checkpointer(shard, tenure);
    const recovery = await checkpointer.recover();
    if (recovery.kind === 'lost') {
      if (!config.allowFreshStart) {
        throw new RefusedToStart(
          `no valid checkpoint of shard ${config.index} is left in ${config.checkpointDir} although some were committed ` +
            `(unusable: ${recovery.broken.join(', ') || 'none listed'}); refusing to serve an empty shard. ` +
            'Restore the files, or start with --allow-fresh-start to begin again from nothing.',
          exitCodes.checkpointsLost,
        );
      }
      this.logger.warn('every committed checkpoint is lost; starting empty (--allow-fresh-start)', {
        broken: recovery.broken,
      });
    }
    this.port = await bindServer(this.server, config.host, config.port, this.security.credentials);
    this.serve(shard, checkpointer, tenure, {
      consistency: config.consistency,
      roster: new FixedRoster(config.syncTrainers),
    });
    this.logger.info('listening', {
      address: this.address,
      mode: 'standalone (no etcd)',
      shard: `${config.index} of ${config.shards}`,
      shardEpoch: tenure.epoch,
      recovered: recovery.kind === 'restored' ? recovery.meta.path : undefined,
      checkpointDir: config.checkpointDir,
    });
  }

  private async startCluster(endpoints: string[]): Promise<void> {
    const { config, logger } = this;
    // Before registering: a spare that could not use the directory must not take an index.
    await this.checkCheckpointDirectory(undefined);
    const member = (this.member = await ClusterMember.connect({
      endpoints,
      security: config.etcdSecurity,
      job: config.job,
      member: config.member,
      leaseTtlSeconds: config.leaseTtlSeconds,
      logger,
    }));
    // No lease, no registration: whatever this process holds or waits for, it must stop.
    member.onEnded((reason) => this.fence(`its lease can no longer be trusted (${reason})`));
    this.port = await bindServer(this.server, config.host, config.port, this.security.credentials);
    const address = config.advertiseAddress ?? this.address;
    this.health.set('', 'NOT_SERVING');
    logger.info('listening', {
      address: this.address,
      mode: 'cluster',
      job: config.job,
      member: config.member,
    });
    await member.register(address);
    // A finished job's pservers leave, each after a final checkpoint of what it serves.
    member.jobFinished(this.abort.signal).then(
      () => {
        this.jobDone = true;
        this.stopRequested('the job is finished');
      },
      () => undefined,
    );
    await this.serveNextRole(member, address, undefined);
  }

  /**
   * Waits for a role (a hot spare until one comes) and takes it up: the primary of a shard
   * (`servePrimary`) or a replica of one (`follow`).
   */
  private async serveNextRole(
    member: ClusterMember,
    address: string,
    previous: ShardTenure | undefined,
  ): Promise<void> {
    this.logger.info('waiting for a shard index or a replica to keep (a hot spare until then)');
    const role = await member.nextRole(this.abort.signal);
    if (role.kind === 'replica') this.follow(member, address, role.tenure);
    else await this.servePrimary(member, address, role.tenure, previous, undefined);
  }

  /**
   * Keeps a copy of a shard for its primary until the replica key goes: fetches and loads the
   * primary's copy, then applies what the primary forwards. When the key goes because the master
   * promoted this replica, it serves the shard from its copy at once; otherwise it drops the copy
   * and waits for a role again.
   */
  private follow(member: ClusterMember, address: string, tenure: ReplicaTenure): void {
    const { config, logger } = this;
    const follower = new ReplicaFollower({
      tenure,
      member: config.member,
      // Its own: a job's pservers may share the checkpoint directory.
      scratchDir: path.join(
        config.checkpointDir,
        '.replication',
        `in-${encodeURIComponent(config.member)}`,
      ),
      primary: this.peers.primaryCalls(tenure.primaryAddress, {
        index: tenure.index,
        primaryEpoch: tenure.primaryEpoch,
        member: config.member,
      }),
      logger: logger.child({ component: 'replica' }),
      // A copy that could not take a forward is no state to leave for anyone.
      onDiverged: (reason) =>
        this.fence(`the replica diverged from its primary: ${reason}`, { leaveState: false }),
      stalled: () => this.failpoint?.('forward') === true,
    });
    this.following = { tenure, follower };
    logger.info('replicating a shard', {
      index: tenure.index,
      primaryEpoch: tenure.primaryEpoch,
      primary: tenure.primaryAddress,
    });
    tenure.onLost((reason) => void this.onReplicaLost(member, address, tenure, follower, reason));
    void follower.join();
  }

  private async onReplicaLost(
    member: ClusterMember,
    address: string,
    tenure: ReplicaTenure,
    follower: ReplicaFollower,
    reason: string,
  ): Promise<void> {
    if (this.stopping || this.fenced || this.following?.tenure !== tenure) return;
    if (!member.isAlive()) return this.fence(reason);
    try {
      const next = await member.currentRole();
      follower.stop();
      this.following = undefined;
      if (next?.kind === 'primary') {
        // Promoted (the master promotes only a key marked in sync) and no one announced serving
        // the shard after the copy's primary (one that never announced took no push): the copy
        // holds every acknowledged push. Otherwise recover.
        const promoted =
          next.tenure.index === follower.index &&
          follower.caughtUp &&
          next.tenure.lastServedEpoch <= tenure.primaryEpoch;
        const copy = promoted ? follower.shard : undefined;
        await this.servePrimary(member, address, next.tenure, undefined, copy);
      } else if (next?.kind === 'replica') {
        if (next.tenure.replica.createRevision === tenure.replica.createRevision)
          return this.fence(`the replica's watch ended while it is still a replica (${reason})`);
        this.follow(member, address, next.tenure);
      } else {
        this.logger.info('no longer a replica; dropping the copy', { reason });
        await this.serveNextRole(member, address, undefined);
      }
    } catch (err) {
      if (this.stopping || this.fenced) return;
      this.logger.fatal('taking up the next role failed', { err });
      this.fence(`taking up the next role failed: ${(err as Error).message}`);
    }
  }

  /**
   * Takes up a primary's tenure, recovers the shard (or takes `copy`, an in-sync replica's: a
   * promotion restores nothing), serves it and announces that. `previous` is the tenure that just
   * ended, if any: its own assignment is never taken up again.
   */
  private async servePrimary(
    member: ClusterMember,
    address: string,
    tenure: EtcdShardTenure,
    previous: ShardTenure | undefined,
    copy: Shard | undefined,
  ): Promise<void> {
    const { config, logger } = this;
    if (previous && tenure.index === previous.index && tenure.epoch === previous.epoch) {
      // Still the assignment that was lost (e.g. its watch failed): its shard was dropped, so
      // serving it again under the same epoch could answer for updates it no longer holds.
      this.fence(`assign/${tenure.index} with epoch ${tenure.epoch} was lost once already`);
      return;
    }
    this.tenure = tenure;
    tenure.onLost((err) => this.onTenureLost(member, address, tenure, err));
    const { index, shardCount, blockSize, epoch } = tenure;
    logger.info('assigned a shard', { index, shardCount, blockSize, shardEpoch: epoch });
    await this.checkCheckpointDirectory(index);
    const shard = copy ?? new Shard(index, shardCount, undefined);
    const checkpointer = this.checkpointer(shard, tenure);
    let recovery: Awaited<ReturnType<Checkpointer['recover']>> | { kind: 'promoted' };
    try {
      recovery = copy ? { kind: 'promoted' } : await checkpointer.recover(tenure.lastServedEpoch);
      // Committed before anything is served: the orphan is not needed again once this serves.
      if (recovery.kind === 'adopted') await checkpointer.save('adopted an orphaned state');
    } catch (err) {
      // Ended while recovering: the tenure's holders (onTenureLost) decide what happens next.
      if (tenure.lost) return;
      throw err;
    }
    if (recovery.kind === 'lost' && !config.allowFreshStart) {
      // Keep the index: a spare taking it would only refuse in turn. An operator must act.
      logger.fatal(
        `NOT SERVING shard ${index}: checkpoints were committed but none is valid (unusable: ${recovery.broken.join(', ')}). ` +
          'Restore the files under the checkpoint directory and restart, or restart with --allow-fresh-start.',
        { index, checkpointDir: config.checkpointDir },
      );
      return;
    }
    this.failpoint?.('after-recovery');
    if (!tenure.holds()) return;
    const orphansRemoved = await removeOrphanedStates(config.checkpointDir, index, epoch);
    const consistency = await member.jobConsistency();
    const roster =
      consistency.mode === 'async' ? undefined : await member.trainerRoster(rosterRelistMs);
    if (!tenure.holds()) return;
    this.serve(shard, checkpointer, tenure, { consistency, roster });
    // Trainers send to the shard once the view says it serves: after recovery, not before.
    await tenure.announceServing();
    if (!tenure.holds()) return;
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
      promoted: recovery.kind === 'promoted' ? { appliedSeq: shard.appliedSeq } : undefined,
      orphansRemoved: orphansRemoved.length > 0 ? orphansRemoved : undefined,
    });
  }

  /** Keeps the served shard's replica links in step with its replica keys. */
  private async watchReplicas(tenure: EtcdShardTenure): Promise<void> {
    const serving = this.serving;
    if (!serving?.links) return;
    const stop = await tenure.watchReplicas((replicas) => serving.links?.update(replicas));
    if (this.serving === serving) serving.stopWatchingReplicas = stop;
    else await stop();
  }

  private replicationStatus(): ReplicationStatus | undefined {
    const { serving, following } = this;
    if (serving?.links)
      return {
        role: 'primary',
        appliedSeq: serving.shard.appliedSeq,
        replicas: serving.links.describe(),
      };
    if (following)
      return {
        role: 'replica',
        appliedSeq: following.follower.shard?.appliedSeq ?? 0,
        inSync: following.follower.inSync,
        digests: following.follower.digests,
      };
    return undefined;
  }

  /** What the replication calls act on: the served shard with its links, or the copy kept. */
  private replicationRole(): ReplicationRole {
    const serving = this.serving;
    if (serving?.links)
      return {
        kind: 'primary',
        shard: serving.shard,
        tenure: serving.tenure,
        links: serving.links,
        checkpointer: serving.checkpointer,
        scratchDir: path.join(this.config.checkpointDir, '.replication', 'out'),
      };
    if (this.following) return { kind: 'replica', follower: this.following.follower };
    return undefined;
  }

  /**
   * The tenure ended. Lease gone, or a shard that was initialized: fence and exit (a fresh
   * process recovers the shard from its checkpoint). Otherwise the master re-assigned the index
   * (a new shard count before initialization): drop the shard, refusing calls in flight with
   * PSERVER_FENCED, and wait for an index again under the same registration.
   */
  private onTenureLost(
    member: ClusterMember,
    address: string,
    tenure: ShardTenure,
    err: TenureLostError,
  ): void {
    if (this.stopping || this.fenced || this.tenure !== tenure) return;
    const serving = this.serving;
    if (!member.isAlive() || serving?.shard.initialized) {
      this.fence(err.reason);
      return;
    }
    this.logger.warn(
      'the shard was re-assigned before initialization; waiting for an index again',
      {
        reason: err.reason,
      },
    );
    this.health.setAll('NOT_SERVING');
    this.serving = undefined;
    this.tenure = undefined;
    void serving?.checkpointer.stop();
    serving?.links?.close();
    void serving?.stopWatchingReplicas?.();
    void member
      .withdrawServing()
      .catch(() => undefined)
      .then(() => this.serveNextRole(member, address, tenure))
      .catch((cause: unknown) => {
        if (this.stopping || this.fenced) return;
        this.logger.fatal('waiting for a shard index again failed', { err: cause });
        this.fence(`waiting for a shard index again failed: ${(cause as Error).message}`);
      });
  }

  /**
   * Before anything is recovered or written: the checkpoint directory (created 0700 when missing)
   * and, once the index is known, the shard's directory in it must be this process's own and not
   * writable by others (libs/checkpoint's directory-check.ts has the rule and why); refuses to
   * start otherwise (exit 5). A directory others can read is only warned about.
   */
  private async checkCheckpointDirectory(index: number | undefined): Promise<void> {
    const check = await checkCheckpointDirectories(this.config.checkpointDir, index);
    if (!check.ok) throw new RefusedToStart(check.message, exitCodes.checkpointDirectoryUnsafe);
    for (const warning of check.warnings) {
      if (this.directoryWarnings.has(warning)) continue;
      this.directoryWarnings.add(warning);
      this.logger.warn(warning);
    }
  }

  private checkpointer(shard: Shard, tenure: ShardTenure): Checkpointer {
    const { failpoint } = this;
    return new Checkpointer({
      root: this.config.checkpointDir,
      shard,
      tenure,
      retain: this.config.checkpointRetain,
      deltasPerFull: this.config.checkpointDeltas,
      logger: this.logger.child({ component: 'checkpoint' }),
      hook: failpoint && ((point) => void failpoint(point)),
      stepMarkRetentionMs: this.config.stepMarkRetentionMs,
      onCommitted: (seconds) => this.metrics.checkpoints.seconds.observe(seconds),
      onFailed: () => this.metrics.checkpoints.failures.inc(),
    });
  }

  private serve(
    shard: Shard,
    checkpointer: Checkpointer,
    tenure: ShardTenure,
    steps: { consistency: JobConsistency; roster: Roster | undefined },
  ): void {
    const links =
      tenure.mode === 'cluster'
        ? new ReplicaLinks({
            index: shard.index,
            epoch: tenure.epoch,
            appliedSeq: () => shard.appliedSeq,
            forward: this.peers.forward,
            logger: this.logger.child({ component: 'replication' }),
            digest: {
              everyMs: this.config.replicaDigestIntervalMs,
              compute: () => shardDigest(shard),
            },
            lag: {
              timeoutMs: this.config.replicaLagTimeoutMs,
              // Links exist in cluster mode only, where the tenure is etcd's.
              drop: (replica) => (tenure as EtcdShardTenure).dropReplica(replica),
            },
          })
        : undefined;
    const service = new ParameterService({
      shard,
      tenure,
      admission: new AdmissionControl(this.config.maxPushBytesInFlight),
      checkpointer,
      onDuplicatePush: () => this.metrics.duplicatePushes.inc(),
      onLostContributions: ({ step, trainers }) => {
        this.metrics.lostContributions.inc(trainers.length);
        this.logger.warn(
          `step ${step} closed without the contributions of trainers ${trainers.join(', ')}: they finished it before this shard was restored from its checkpoint, and were lost with the crash`,
          { step, trainers },
        );
      },
      maxReplyBytes: this.config.maxMessageBytes,
      ...steps,
      replication: links && {
        replicate: (seq, push) => links.replicate(seq, push),
        replicated: () => links.settled(),
        replicas: () => links.describe(),
      },
    });
    this.serving = { shard, service, checkpointer, tenure, links };
    checkpointer.startPeriodic(this.config.checkpointIntervalMs);
    this.health.setAll('SERVING');
  }

  private requireService(): ParameterService {
    if (this.fenced)
      throw new PserverError('PSERVER_FENCED', 'this pserver was fenced and is stopping');
    if (!this.serving)
      throw new PserverError(
        'PSERVER_NOT_SERVING',
        'not serving yet: waiting for a shard index or recovering it',
      );
    return this.serving.service;
  }

  /**
   * Stops acting on the shard at once and exits for the supervisor to start a fresh process.
   * Calls in flight are answered first — PSERVER_FENCED (UNAVAILABLE), never applied — rather
   * than cut by a connection reset: the tenure ends now (every handler requires it before acting,
   * and calls waiting for initialization are refused), new calls are refused, and the server
   * gets a short, bounded moment to send those answers. With `leaveState`, what the shard holds
   * is written for its next owner first (`writeOrphanedState`).
   */
  private fence(reason: string, { leaveState = true } = {}): void {
    // Revoking the lease at the end of a graceful stop deletes the assignment on purpose; a
    // fenced commit during the stop fails the stop itself.
    if (this.fenced || this.stopping) return;
    this.fenced = true;
    this.health.setAll('NOT_SERVING');
    this.tenure?.lose(reason);
    this.logger.error('fenced: no longer acting on the shard; exiting', { reason });
    const orphaned = leaveState ? this.writeOrphanedState() : Promise.resolve();
    void Promise.all([shutdownServer(this.server, fencedAnswerGraceMs), orphaned]).finally(() =>
      this.onFatal(exitCodes.fenced),
    );
  }

  /**
   * Cluster mode: writes what the shard (or the in-sync copy kept of one) holds now, in the same
   * tick as the fence, so every push acknowledged is in it and none after; the index's next owner
   * adopts it when no other owner came in between (orphaned-state.ts). A replica not yet in sync
   * holds less than was acknowledged: it writes nothing.
   */
  private writeOrphanedState(): Promise<void> {
    const { serving, following } = this;
    const source =
      serving?.tenure.mode === 'cluster' && serving.shard.initialized
        ? { shard: serving.shard, epoch: serving.tenure.epoch }
        : following?.follower.inSync && following.follower.shard
          ? { shard: following.follower.shard, epoch: following.tenure.primaryEpoch }
          : undefined;
    if (!source) return Promise.resolve();
    const { shard, epoch } = source;
    const buffers = new SnapshotBuffers();
    let snapshot: ReturnType<typeof snapshotShard>;
    try {
      snapshot = snapshotShard(shard, { shardEpoch: epoch, seq: 0, uuid: randomUUID() }, buffers);
    } catch (err) {
      // The fence goes on: exiting matters more than what could not be copied.
      buffers.release();
      this.logger.error("copying the shard's state for its next owner failed", { err });
      return Promise.resolve();
    }
    const facts = { epoch, member: this.config.member, appliedSeq: shard.appliedSeq };
    const started = performance.now();
    return writeOrphanedState(this.config.checkpointDir, snapshot, facts)
      .then((file) =>
        this.logger.warn("wrote the shard's state for its next owner", {
          file,
          ...facts,
          updatesApplied: snapshot.updatesApplied,
          ms: Math.round(performance.now() - started),
        }),
      )
      .catch((err: unknown) =>
        this.logger.error("writing the shard's state for its next owner failed", { err }),
      )
      .finally(() => buffers.release());
  }
}
