import type { Server, UntypedServiceImplementation } from '@grpc/grpc-js';

import { checkCheckpointDirectories, ManifestStore, type MetaStore } from '@pserver/checkpoint';
import {
  EtcdMetaStore,
  JobKeys,
  LeaseKeeper,
  openEtcd,
  PserverMembership,
  readJobState,
  type EtcdClient,
} from '@pserver/coordination';
import type { LogFields, Logger } from '@pserver/logging';
import {
  addReflection,
  bindServer,
  callMetricsInterceptor,
  createGrpcServer,
  HealthService,
  loadServerSecurity,
  type ServerSecurity,
  parameterServerService,
  serveMetrics,
  serviceNames,
  shutdownServer,
  type MetricsServer,
} from '@pserver/rpc';
import type { PserverConfig } from './config';
import { failpointHook } from './failpoint';
import { pserverMetrics } from './metrics';
import { AdmissionControl } from './service/admission';
import { Checkpointer } from './service/checkpointer';
import { ClusterEpochGuard } from './service/cluster-epoch-guard';
import { FixedEpochGuard, type EpochGuard } from './service/epoch-guard';
import { PserverError } from './service/errors';
import { ParameterService } from './service/parameter-service';
import { Shard } from './service/shard';
import { parameterServerHandlers } from './transport/parameter-server-handlers';

/** Exit codes a supervisor can tell apart. */
export const exitCodes = {
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

/** The shard being served, once it is ready. */
interface Serving {
  shard: Shard;
  service: ParameterService;
  checkpointer: Checkpointer;
  epoch: EpochGuard;
}

/**
 * The pserver process. Standalone: shard --index of --shards, its manifest in the checkpoint
 * directory. Cluster: registers in etcd, waits (as a hot spare) for the master to assign an
 * index, recovers that shard from the checkpoint metas in etcd, serves it while its lease can be
 * trusted, and fences itself (NOT_SERVING, UNAVAILABLE, exit 4) when it cannot.
 */
export class PserverNode {
  private readonly health = new HealthService([serviceNames.parameterServer]);
  private readonly server: Server;
  private readonly abort = new AbortController();
  private serving: Serving | undefined;
  private port: number | undefined;
  private client: EtcdClient | undefined;
  private lease: LeaseKeeper | undefined;
  private fenced = false;
  private stopping = false;
  private readonly metrics = pserverMetrics({
    status: () => this.serving?.service.getShardStatus(),
    leaseValidUntil: () => this.lease?.validUntil,
  });
  private metricsServer: MetricsServer | undefined;
  /** Warnings about the checkpoint directory already logged (cluster mode checks it twice). */
  private readonly directoryWarnings = new Set<string>();
  private readonly security: ServerSecurity;

  constructor(
    private readonly config: PserverConfig,
    private readonly logger: Logger,
    /** Called when the process must end now (fenced), with the exit code. */
    private readonly onFatal: (code: number) => void = (code) => process.exit(code),
  ) {
    this.security = loadServerSecurity(config.security, config.host, logger);
    this.server = createGrpcServer({
      maxMessageBytes: config.maxMessageBytes,
      flowControlWindowBytes: config.flowControlWindowBytes,
      // The last interceptor sees a call first: access is checked before anything is counted.
      interceptors: [callMetricsInterceptor(this.metrics.registry), ...this.security.interceptors],
    });
    const handlers = parameterServerHandlers(() => this.requireService(), logger);
    this.server.addService(
      parameterServerService,
      handlers as unknown as UntypedServiceImplementation,
    );
    this.health.addTo(this.server);
    addReflection(this.server, [serviceNames.parameterServer]);
  }

  /** What every log line carries: the component, and the shard and epoch while serving one. */
  logContext(): LogFields {
    const serving = this.serving;
    return serving
      ? { component: 'node', index: serving.shard.index, shardEpoch: serving.epoch.current }
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
    if (this.config.etcdEndpoints) await this.startCluster(this.config.etcdEndpoints);
    else await this.startStandalone();
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
    await this.lease
      ?.revoke()
      .catch((err: unknown) => this.logger.warn('revoking the lease failed', { err }));
    this.client?.close();
    await this.metricsServer?.close();
    this.logger.info('stopped', { graceful });
  }

  private async startStandalone(): Promise<void> {
    const { config } = this;
    await this.checkCheckpointDirectory(config.index);
    // Opening the manifest raises the standalone epoch, durably, before anything is served.
    const store = await ManifestStore.open(config.checkpointDir, config.index, config.shards);
    const shard = new Shard(config.index, config.shards, undefined);
    const checkpointer = this.checkpointer(shard, store, store.epoch);
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
    this.serve(shard, checkpointer, new FixedEpochGuard(store.epoch), 'SHARD_MODE_STANDALONE');
    this.logger.info('listening', {
      address: this.address,
      mode: 'standalone (no etcd)',
      shard: `${config.index} of ${config.shards}`,
      shardEpoch: store.epoch,
      recovered: recovery.kind === 'restored' ? recovery.meta.path : undefined,
      checkpointDir: config.checkpointDir,
    });
  }

  private async startCluster(endpoints: string[]): Promise<void> {
    const { config, logger } = this;
    // Before registering: a spare that could not use the directory must not take an index.
    await this.checkCheckpointDirectory(undefined);
    const keys = new JobKeys(config.job);
    const client = (this.client = await openEtcd({
      endpoints,
      security: config.etcdSecurity,
      probeKey: keys.desired,
    }));
    const lease = (this.lease = await LeaseKeeper.grant(client, {
      ttlSeconds: config.leaseTtlSeconds,
      logger,
    }));
    lease.onExpired((reason) => this.fence(reason));
    this.port = await bindServer(this.server, config.host, config.port, this.security.credentials);
    const address = config.advertiseAddress ?? this.address;
    this.health.set('', 'NOT_SERVING');
    logger.info('listening', {
      address: this.address,
      mode: 'cluster',
      job: config.job,
      member: config.member,
    });
    const membership = await PserverMembership.register(
      client,
      keys,
      lease,
      config.member,
      address,
      logger,
    );
    logger.info('waiting for a shard index (a hot spare until one frees)');
    const assignment = await membership.waitForAssignment(this.abort.signal);
    const { index, epoch } = assignment;
    const shardCount = (await readJobState(client, keys)).desired ?? index + 1;
    logger.info('assigned a shard', { index, shardCount, shardEpoch: epoch });
    await membership.watchAssignment(index, epoch, (reason) => this.fence(reason));
    await this.checkCheckpointDirectory(index);
    const shard = new Shard(index, shardCount, undefined);
    const store = await EtcdMetaStore.open(client, keys, index, epoch, lease);
    const checkpointer = this.checkpointer(shard, store, epoch);
    const recovery = await checkpointer.recover();
    if (recovery.kind === 'lost' && !config.allowFreshStart) {
      // Keep the index: a spare taking it would only refuse in turn. An operator must act.
      logger.fatal(
        `NOT SERVING shard ${index}: checkpoints were committed but none is valid (unusable: ${recovery.broken.join(', ')}). ` +
          'Restore the files under the checkpoint directory and restart, or restart with --allow-fresh-start.',
        { index, checkpointDir: config.checkpointDir },
      );
      return;
    }
    const guard = new ClusterEpochGuard(
      epoch,
      () => membership.holds(index, epoch),
      (reason) => this.fence(reason),
    );
    this.serve(shard, checkpointer, guard, 'SHARD_MODE_CLUSTER', () => {
      if (this.fenced || !lease.isValid())
        throw new PserverError(
          'PSERVER_FENCED',
          `shard ${index}: this pserver's lease can no longer be trusted`,
        );
    });
    logger.info('serving', {
      index,
      shardEpoch: epoch,
      address,
      recovered: recovery.kind === 'restored' ? recovery.meta.path : undefined,
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

  private checkpointer(shard: Shard, store: MetaStore, epoch: number): Checkpointer {
    return new Checkpointer({
      root: this.config.checkpointDir,
      shard,
      store,
      epoch,
      retain: this.config.checkpointRetain,
      logger: this.logger.child({ component: 'checkpoint' }),
      hook: failpointHook(this.config.failpoint, this.logger),
      onFenced: (reason) => this.fence(reason),
      stepMarkRetentionMs: this.config.stepMarkRetentionMs,
      onCommitted: (seconds) => this.metrics.checkpoints.seconds.set(seconds),
      onFailed: () => this.metrics.checkpoints.failures.inc(),
    });
  }

  private serve(
    shard: Shard,
    checkpointer: Checkpointer,
    epoch: EpochGuard,
    mode: 'SHARD_MODE_STANDALONE' | 'SHARD_MODE_CLUSTER',
    fence?: () => void,
  ): void {
    const service = new ParameterService({
      shard,
      epoch,
      admission: new AdmissionControl(this.config.maxPushBytesInFlight),
      checkpointer,
      mode,
      fence,
      onDuplicatePush: () => this.metrics.duplicatePushes.inc(),
    });
    this.serving = { shard, service, checkpointer, epoch };
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

  /** Stops acting on the shard at once and exits for the supervisor to start a fresh process. */
  private fence(reason: string): void {
    // Revoking the lease at the end of a graceful stop deletes the assignment on purpose; a
    // fenced commit during the stop fails the stop itself.
    if (this.fenced || this.stopping) return;
    this.fenced = true;
    this.health.setAll('NOT_SERVING');
    this.logger.error('fenced: no longer acting on the shard; exiting', { reason });
    this.onFatal(exitCodes.fenced);
  }
}
