import type { Server, UntypedServiceImplementation } from '@grpc/grpc-js';
import {
  JobKeys,
  LeaderElection,
  leaderOf,
  LeaseKeeper,
  openEtcd,
  type EtcdClient,
} from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import {
  addReflection,
  bindServer,
  callMetricsInterceptor,
  createGrpcServer,
  HealthService,
  loadServerSecurity,
  type ServerSecurity,
  masterService,
  serviceNames,
  shutdownServer,
  serveMetrics,
  type MetricsServer,
} from '@pserver/rpc';
import type { MasterConfig } from './config';
import { masterMetrics } from './metrics';
import { LeaderRole } from './service/leader-role';
import { MasterService } from './service/master-service';
import { masterHandlers } from './transport/master-handlers';

/** Exit codes a supervisor can tell apart. */
export const exitCodes = { ok: 0, failure: 1, leadershipLost: 4 } as const;

/**
 * A master replica. Every replica serves gRPC and is ready (overall health SERVING); the
 * `pserver.v1.Master` health service is SERVING only while it leads. A replica whose lease can no
 * longer be trusted stops leading and exits, for its supervisor to start it again as a candidate.
 */
export class MasterNode {
  private readonly health = new HealthService([serviceNames.master]);
  private readonly server: Server;
  private readonly security: ServerSecurity;
  private readonly service: MasterService;
  private readonly keys: JobKeys;
  private client: EtcdClient | undefined;
  private lease: LeaseKeeper | undefined;
  private election: LeaderElection | undefined;
  private role: LeaderRole | undefined;
  private readonly campaignAbort = new AbortController();
  private address = '';
  private readonly metrics = masterMetrics(() => this.role);
  private metricsServer: MetricsServer | undefined;

  constructor(
    private readonly config: MasterConfig,
    private readonly logger: Logger,
    private readonly onFatal: (code: number) => void,
  ) {
    this.keys = new JobKeys(config.job);
    this.service = new MasterService({
      address: () => this.address,
      leaderAddress: async () =>
        this.client ? (await leaderOf(this.client, this.keys.electionPrefix))?.value : undefined,
    });
    this.security = loadServerSecurity(config.security, config.host, logger);
    this.server = createGrpcServer({
      maxMessageBytes: 16 * 1024 * 1024,
      flowControlWindowBytes: 1024 * 1024,
      // The last interceptor sees a call first: access is checked before anything is counted.
      interceptors: [callMetricsInterceptor(this.metrics), ...this.security.interceptors],
    });
    this.server.addService(
      masterService,
      masterHandlers(this.service, logger) as unknown as UntypedServiceImplementation,
    );
    this.health.addTo(this.server);
    addReflection(this.server, [serviceNames.master]);
  }

  async start(): Promise<void> {
    const { config, logger } = this;
    if (config.metricsPort !== undefined) {
      this.metricsServer = await serveMetrics(this.metrics, config.host, config.metricsPort);
      logger.info('metrics listening', { address: this.metricsServer.address });
    }
    logger.info('security', { grpc: this.security.description });
    for (const warning of this.security.warnings) logger.warn(warning);
    const port = await bindServer(this.server, config.host, config.port, this.security.credentials);
    this.address = config.advertiseAddress ?? `${config.host}:${port}`;
    this.client = await openEtcd({
      endpoints: config.etcdEndpoints,
      security: config.etcdSecurity,
      probeKey: this.keys.desired,
    });
    this.lease = await LeaseKeeper.grant(this.client, {
      ttlSeconds: config.leaseTtlSeconds,
      logger,
    });
    this.lease.onExpired((reason) => {
      logger.fatal('the election lease can no longer be trusted; exiting', { reason });
      this.onFatal(exitCodes.leadershipLost);
    });
    this.election = new LeaderElection(
      this.client,
      this.keys.electionPrefix,
      this.lease,
      this.address,
      logger,
    );
    this.health.set('', 'SERVING');
    logger.info('listening', { address: this.address, job: config.job, role: 'candidate' });
    void this.campaign();
  }

  /** Follower: stop. Leader: resign first, so a follower takes over at once. */
  async stop(): Promise<void> {
    this.health.setAll('NOT_SERVING');
    this.campaignAbort.abort(new Error('stopping'));
    this.service.setRole(undefined);
    await this.role?.stop();
    await this.election?.resign().catch(() => undefined);
    await shutdownServer(this.server, this.config.shutdownGraceMs);
    await this.lease?.revoke().catch(() => undefined);
    this.client?.close();
    await this.metricsServer?.close();
    this.logger.info('stopped');
  }

  private async campaign(): Promise<void> {
    try {
      const leader = await this.election!.campaign(this.campaignAbort.signal);
      this.logger.info('elected; loading the job state', { revision: leader.revision });
      const role = new LeaderRole(this.client!, this.keys, leader, {
        job: this.config.job,
        desiredPservers: this.config.desiredPservers,
        blockSize: this.config.blockSize,
        sessionTtlMs: this.config.sessionTtlSeconds * 1000,
        relistIntervalMs: this.config.relistIntervalMs,
        logger: this.logger.child({ component: 'leader' }),
      });
      await role.start();
      this.role = role;
      this.service.setRole(role);
      this.health.set(serviceNames.master, 'SERVING');
      this.logger.info('leading', { address: this.address, revision: leader.revision });
    } catch (err) {
      if (this.campaignAbort.signal.aborted) return;
      this.logger.fatal('the election failed; exiting', { err });
      this.onFatal(exitCodes.failure);
    }
  }
}
