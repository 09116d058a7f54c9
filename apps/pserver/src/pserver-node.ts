import path from 'node:path';
import type { Server } from '@grpc/grpc-js';
import { checkCheckpointDirectories, SnapshotPools } from '@pserver/checkpoint';
import {
  ClusterMember,
  StandaloneTenure,
  type EtcdShardTenure,
  type ReplicaTenure,
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
import { failpointHook, type FailpointHook } from './failpoint';
import { pserverMetrics } from './metrics';
import { FixedRoster } from './consistency/roster';
import { ShareReceiver } from './moves/share-receiver';
import { leaveState } from './persistence/leave-state';
import { PeerClients, peerSecurity } from './replication/peer-calls';
import { ReplicationService } from './replication/replication-service';
import type { ParameterService } from './service/parameter-service';
import { PserverError } from './shard/errors';
import type { Shard } from './shard/shard';
import { PrimaryRole } from './roles/primary-role';
import { ReplicaRole } from './roles/replica-role';
import type { RoleContext } from './roles/role-context';
import { RoleKeeper } from './roles/role-keeper';
import { dataPathMethods } from './transport/direct/data-path';
import { parameterServerHandlers } from './transport/parameter-server-handlers';
import { replicationHandlers } from './transport/replication-handlers';

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
/** How often a pserver reads whether a live change names it the receiver of an index. */
const liveMovePollMs = 250;
/** How long a received share nobody took is kept after its change is over. */
const unclaimedShareKeepMs = 60_000;

/**
 * The pserver process: its gRPC server and handlers, health, metrics, start and stop, drain and
 * fence. What it does with a shard is its role's, handed over by its `RoleKeeper`. Standalone:
 * the primary of shard --index of --shards, its manifest in the checkpoint directory. Cluster:
 * registers in etcd, waits (as a hot spare) for the master to assign it a role — a shard's
 * primary (`PrimaryRole`) or a replica of one (`ReplicaRole`) — and takes up each role the keeper
 * hands it. When it can no longer trust its lease or a tenure it held initialized state under, it
 * fences itself: calls in flight are answered PSERVER_FENCED, then it exits 4.
 */
export class PserverNode {
  private readonly health = new HealthService([serviceNames.parameterServer]);
  private readonly server: Server;
  private readonly abort = new AbortController();
  private readonly keeper: RoleKeeper<EtcdShardTenure, ReplicaTenure, PrimaryRole, ReplicaRole>;
  private readonly peers: PeerClients;
  private readonly snapshotPools = new SnapshotPools();
  private port: number | undefined;
  private member: ClusterMember | undefined;
  /** Cluster mode: the receiving side of live moves. */
  private receiver: ShareReceiver | undefined;
  /** Asks the process to stop as on SIGTERM (main's handler), with the reason. */
  private stopRequested: (reason: string) => void = () => undefined;
  private readonly metrics = pserverMetrics({
    status: () => this.primary()?.service?.getShardStatus(),
    leaseValidUntil: () => this.member?.leaseValidUntil,
    replication: () => this.keeper.current?.replicationStatus(),
    parked: () => {
      const parked = this.primary()?.service?.consistency.parked;
      return parked && { calls: parked.size, waitedSeconds: parked.waitedSeconds };
    },
  });
  private metricsServer: MetricsServer | undefined;
  /** Warnings about the checkpoint directory already logged (cluster mode checks it twice). */
  private readonly directoryWarnings = new Set<string>();
  private readonly security: ServerSecurity;
  private readonly failpoint: FailpointHook | undefined;

  constructor(
    private readonly config: PserverConfig,
    private readonly logger: Logger,
    /** Called when the process must end now (fenced), with the exit code. */
    private readonly onFatal: (code: number) => void = (code) => process.exit(code),
  ) {
    this.security = loadServerSecurity(config.security, config.host, logger);
    this.failpoint = failpointHook(config.failpoint, logger);
    this.keeper = new RoleKeeper(
      {
        logger,
        fence: (reason) => this.fence(reason),
        notServing: () => this.health.setAll('NOT_SERVING'),
      },
      this.abort.signal,
    );
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
    this.server.addService(
      parameterServerService,
      parameterServerHandlers(
        () => this.requireService(),
        () => this.drain(),
        logger,
      ),
    );
    const replication = new ReplicationService(
      () => this.keeper.current?.replication(),
      () => this.receiver,
    );
    this.server.addService(replicationService, replicationHandlers(replication, logger));
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
    const primary = this.primary();
    return primary?.service
      ? { component: 'node', index: primary.index, shardEpoch: primary.epoch }
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
      if (this.keeper.ended === 'fenced') return;
      throw err;
    }
  }

  /** The exit code after `stop()`: 0 standalone or once the job is finished, else stoppedEarly. */
  get stopExitCode(): number {
    return this.member && !this.keeper.jobFinished ? exitCodes.stoppedEarly : exitCodes.ok;
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
    const primary = this.primary();
    const serving = primary?.service ? primary : undefined;
    this.logger.info('drain requested: handing over and stopping', { index: serving?.index });
    setImmediate(() => this.stopRequested('drained'));
    return serving ? { index: serving.index, shardEpoch: serving.epoch } : { shardEpoch: 0 };
  }

  /**
   * NOT_SERVING; refuse changes; let calls in flight finish (up to the grace period); the role
   * stops (a primary commits a final checkpoint if the shard changed, unless fenced); in cluster
   * mode revoke the lease, so the index frees at once.
   */
  async stop(): Promise<void> {
    this.keeper.end('stopping');
    this.health.setAll('NOT_SERVING');
    this.abort.abort(new Error('stopping'));
    const role = this.keeper.current;
    if (role?.kind === 'primary') role.beginShutdown();
    this.receiver?.stop();
    const graceful = await shutdownServer(this.server, this.config.shutdownGraceMs);
    if (role?.kind === 'primary') await role.stop({ fenced: this.keeper.ended === 'fenced' });
    else await role?.close();
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
    const primary = new PrimaryRole(tenure, this.roleContext(undefined));
    this.keeper.hold(primary);
    primary.onEnded((reason) => this.fence(reason));
    const recovery = await primary.recover();
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
    primary.serve({
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
        this.keeper.finishJob();
        this.stopRequested('the job is finished');
      },
      () => undefined,
    );
    const context = this.roleContext({ member, address });
    const receiver = new ShareReceiver({
      member: config.member,
      liveMove: () => member.liveMove(),
      handBacks: (from, signal) => member.handBacks(from, signal),
      primaryCalls: (primaryAddress, request) => this.peers.primaryCalls(primaryAddress, request),
      // Its own: a job's pservers may share the checkpoint directory.
      scratchDir: path.join(
        config.checkpointDir,
        '.replication',
        `move-${encodeURIComponent(config.member)}`,
      ),
      logger: logger.child({ component: 'move' }),
      pollMs: liveMovePollMs,
      keepMs: unclaimedShareKeepMs,
      onCopied: (bytes, seconds) => {
        this.metrics.moves.copiedBytes.inc(bytes);
        this.metrics.moves.copySeconds.observe(seconds);
      },
      // The share's first checkpoint, once it serves, copies it whole: into memory faulted in
      // while the copies come, long before the write pause.
      onCopying: (shareBytes) => void this.snapshotPools.warm(shareBytes).catch(() => undefined),
      stalled: () => this.failpoint?.('forward') === true,
    });
    this.receiver = receiver;
    receiver.start();
    await this.keeper.run(member, {
      primary: (tenure, copy) =>
        new PrimaryRole(
          tenure,
          context,
          copy ? { shard: copy, origin: 'promoted' } : this.movedShare(tenure),
        ),
      replica: (tenure) =>
        // A copy that could not take a forward is no state to leave for anyone.
        new ReplicaRole(tenure, context, (reason) =>
          this.fence(`the replica diverged from its primary: ${reason}`, { leaveHeld: false }),
        ),
    });
  }

  /**
   * The share this pserver received for the index it was just given, when the live change that
   * made the count gave the index to it (`reshape.moved`) and every old shard's copy is loaded.
   */
  private movedShare(tenure: EtcdShardTenure): { shard: Shard; origin: 'moved' } | undefined {
    const reshape = tenure.reshape;
    if (reshape?.moved?.get(tenure.index) !== this.config.member) return undefined;
    const shard = this.receiver?.take(tenure.index, tenure.shardCount, reshape.from);
    return shard && { shard, origin: 'moved' };
  }

  private roleContext(cluster: RoleContext['cluster']): RoleContext {
    return {
      config: this.config,
      logger: this.logger,
      metrics: this.metrics,
      failpoint: this.failpoint,
      peers: this.peers,
      snapshotPools: this.snapshotPools,
      cluster,
      checkDirectory: (index) => this.checkCheckpointDirectory(index),
      handingBack: (shard) => this.receiver?.keepOwn(shard),
      setServing: (serving) => this.health.setAll(serving ? 'SERVING' : 'NOT_SERVING'),
    };
  }

  /** The primary role held now, if any. */
  private primary(): PrimaryRole | undefined {
    const role = this.keeper.current;
    return role?.kind === 'primary' ? role : undefined;
  }

  /** The service of the shard served now; what handlers call. */
  private requireService(): ParameterService {
    if (this.keeper.ended === 'fenced')
      throw new PserverError('PSERVER_FENCED', 'this pserver was fenced and is stopping');
    const service = this.primary()?.service;
    if (!service)
      throw new PserverError(
        'PSERVER_NOT_SERVING',
        'not serving yet: waiting for a shard index or recovering it',
      );
    return service;
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

  /**
   * Stops acting on the shard at once and exits for the supervisor to start a fresh process.
   * Calls in flight are answered first — PSERVER_FENCED (UNAVAILABLE), never applied — rather
   * than cut by a connection reset: the tenure ends now (every handler requires it before acting,
   * and calls waiting for initialization are refused), new calls are refused, and the server
   * gets a short, bounded moment to send those answers. With `leaveHeld`, what the shard holds
   * is written for its next owner first (`leaveState`).
   */
  private fence(reason: string, { leaveHeld = true } = {}): void {
    // Revoking the lease at the end of a graceful stop deletes the assignment on purpose; a
    // fenced commit during the stop fails the stop itself.
    if (!this.keeper.end('fenced')) return;
    this.health.setAll('NOT_SERVING');
    const role = this.keeper.current;
    if (role?.kind === 'primary') role.lose(reason);
    this.logger.error('fenced: no longer acting on the shard; exiting', { reason });
    const held = leaveHeld ? role?.heldState() : undefined;
    const orphaned = held
      ? leaveState(this.config.checkpointDir, held, this.config.member, this.logger)
      : Promise.resolve();
    void Promise.all([shutdownServer(this.server, fencedAnswerGraceMs), orphaned]).finally(() =>
      this.onFatal(exitCodes.fenced),
    );
  }
}
