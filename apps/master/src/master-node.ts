import type { Server } from '@grpc/grpc-js';
import {
  jobFinished,
  JobKeys,
  pserversLeft,
  type Leader,
  LeaderElection,
  leaderOf,
  LeaseKeeper,
  openEtcd,
  type EtcdClient,
} from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import {
  abortableSleep,
  addReflection,
  backoffDelayMs,
  backoffPolicies,
  bindServer,
  CallMetrics,
  callMetricsInterceptor,
  createGrpcServer,
  HealthService,
  loadServerSecurity,
  type ServerSecurity,
  masterService,
  retry,
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
export const exitCodes = {
  /** The job is finished (FinishJob) and every pserver has left. */
  ok: 0,
  failure: 1,
  leadershipLost: 4,
  /**
   * Stopped (SIGTERM, SIGINT) before the job finished. Not 0, which a Kubernetes Job counts as a
   * pod done: a supervisor that keeps the job running starts another master in its place.
   */
  stoppedEarly: 75,
} as const;

/** How long a leader that lost its lease waits for its role to stop before it exits anyway. */
const stepDownGraceMs = 1_000;
/** How long an untrusted lease's revocation may take: best effort, etcd may be unreachable. */
const revokeGraceMs = 500;

/**
 * A master replica. Every replica serves gRPC and is ready (overall health SERVING); the
 * `pserver.v1.Master` health service is SERVING only while it leads. Its election lease is kept
 * by a `LeaseKeeper`, which alone decides when the lease is lost. A candidate that loses it
 * grants a new lease and campaigns again (retrying while etcd is unreachable); a leader that
 * loses it steps down at once and exits (code 4), for its supervisor to start it again as a
 * candidate: nothing of its term survives in the process.
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
  /** Aborted by `stop()`: ends the candidacy, whatever it is waiting for. */
  private readonly stopping = new AbortController();
  /** Elected under the current lease: from then on, losing the lease means stepping down. */
  private elected = false;
  private steppingDown = false;
  private address = '';
  private readonly metrics = masterMetrics(() => this.role);
  private metricsServer: MetricsServer | undefined;
  /** The job is finished (FinishJob). */
  private jobDone = false;

  constructor(
    private readonly config: MasterConfig,
    private readonly logger: Logger,
    private readonly onFatal: (code: number) => void,
    /** Called once the job is finished and every pserver has left: the master's work is done. */
    private readonly onJobDone: () => void = () => undefined,
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
      interceptors: [
        callMetricsInterceptor(new CallMetrics(this.metrics.registry)),
        ...this.security.interceptors,
      ],
    });
    this.server.addService(masterService, masterHandlers(this.service, logger));
    this.health.addTo(this.server);
    addReflection(this.server, [serviceNames.master]);
  }

  async start(): Promise<void> {
    const { config, logger } = this;
    if (config.metricsPort !== undefined) {
      this.metricsServer = await serveMetrics(
        this.metrics.registry,
        config.host,
        config.metricsPort,
      );
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
    const lease = await this.grantLease();
    this.health.set('', 'SERVING');
    logger.info('listening', { address: this.address, job: config.job, role: 'candidate' });
    void this.runForLeader(lease);
    void this.endWhenJobDone();
  }

  /**
   * A finished job (FinishJob) needs its masters until its pservers have committed their final
   * checkpoints and left, so that the view shows them going; then every replica is done.
   */
  private async endWhenJobDone(): Promise<void> {
    const { signal } = this.stopping;
    try {
      await jobFinished(this.client!, this.keys, signal);
      this.jobDone = true;
      this.logger.info('the job is finished; exiting once every pserver has left');
      await retry(() => pserversLeft(this.client!, this.keys).catch(() => 1), {
        policy: backoffPolicies.pserversLeftPoll,
        signal,
        again: (left) => left > 0,
      });
      this.logger.info('the job is finished and every pserver has left');
      this.onJobDone();
    } catch {
      // Stopping.
    }
  }

  /** The exit code after `stop()`: 0 once the job is finished, else stoppedEarly. */
  get stopExitCode(): number {
    return this.jobDone ? exitCodes.ok : exitCodes.stoppedEarly;
  }

  /** Follower: stop. Leader: resign first, so a follower takes over at once. */
  async stop(): Promise<void> {
    this.health.setAll('NOT_SERVING');
    this.stopping.abort(new Error('stopping'));
    this.service.setRole(undefined);
    await this.role?.stop();
    await this.election?.resign().catch(() => undefined);
    await shutdownServer(this.server, this.config.shutdownGraceMs);
    await this.lease?.revoke().catch(() => undefined);
    this.client?.close();
    await this.metricsServer?.close();
    this.logger.info('stopped');
  }

  private grantLease(): Promise<LeaseKeeper> {
    return LeaseKeeper.grant(this.client!, {
      ttlSeconds: this.config.leaseTtlSeconds,
      logger: this.logger,
    });
  }

  /** Campaigns under `lease`, and under a new lease each time a candidacy ends, until leading. */
  private async runForLeader(first: LeaseKeeper): Promise<void> {
    let lease: LeaseKeeper | undefined = first;
    // Candidacies that ended one after another: they wait longer and longer (etcd may be down).
    let endedInARow = 0;
    for (;;) {
      if (endedInARow > 0) await this.backoff(endedInARow);
      lease ??= await this.regrant();
      if (!lease || this.stopping.signal.aborted) return;
      const startedAt = performance.now();
      if (await this.campaign(lease)) return;
      await this.dropLease(lease);
      lease = undefined;
      const lastedMs = performance.now() - startedAt;
      endedInARow = lastedMs > this.config.leaseTtlSeconds * 1000 ? 1 : endedInARow + 1;
    }
  }

  /**
   * One candidacy under `lease`: true once leading (or stopping), false when it ended without
   * leading — the lease was lost, or etcd failed the campaign — so that another one starts.
   */
  private async campaign(lease: LeaseKeeper): Promise<boolean> {
    const lost = new AbortController();
    lease.onExpired((reason) => this.onLeaseExpired(lease, reason, lost));
    this.lease = lease;
    this.elected = false;
    this.election = new LeaderElection(
      this.client!,
      this.keys.electionPrefix,
      lease,
      this.address,
      this.logger,
    );
    let leader: Leader;
    try {
      leader = await this.election.campaign(AbortSignal.any([this.stopping.signal, lost.signal]));
      // Elected by an answer that came after the lease's deadline: not a term to act in.
      if (!lease.isValid()) throw new Error('the lease expired while being elected');
    } catch (err) {
      if (this.stopping.signal.aborted) return true;
      this.logger.warn('the candidacy ended; campaigning again with a new lease', {
        lease: lease.id,
        err: lost.signal.aborted ? lost.signal.reason : err,
      });
      return false;
    }
    this.elected = true;
    await this.lead(leader);
    return true;
  }

  private onLeaseExpired(lease: LeaseKeeper, reason: string, lost: AbortController): void {
    if (lease !== this.lease || this.stopping.signal.aborted) return;
    if (this.elected) {
      void this.stepDown(reason);
      return;
    }
    this.logger.warn('the election lease was lost while a candidate', { lease: lease.id, reason });
    lost.abort(new Error(`the election lease was lost: ${reason}`));
  }

  private async lead(leader: Leader): Promise<void> {
    try {
      this.logger.info('elected; loading the job state', { revision: leader.revision });
      const role = new LeaderRole(this.client!, this.keys, leader, {
        job: this.config.job,
        desiredPservers: this.config.desiredPservers,
        blockSize: this.config.blockSize,
        replicas: this.config.replicas,
        consistency: this.config.consistency,
        sessionTtlMs: this.config.sessionTtlSeconds * 1000,
        relistIntervalMs: this.config.relistIntervalMs,
        logger: this.logger.child({ component: 'leader' }),
        onAssigned: this.metrics.assigned,
        onSessionExpired: this.metrics.sessionExpired,
      });
      await role.start();
      // The lease was lost while loading: the step-down is under way and must find no role.
      if (this.steppingDown || this.stopping.signal.aborted) {
        await role.stop();
        return;
      }
      this.role = role;
      this.service.setRole(role);
      this.health.set(serviceNames.master, 'SERVING');
      this.metrics.becameLeader();
      this.logger.info('leading', { address: this.address, revision: leader.revision });
    } catch (err) {
      if (this.stopping.signal.aborted || this.steppingDown) return;
      this.logger.fatal('could not take up leadership; exiting', { err });
      this.onFatal(exitCodes.failure);
    }
  }

  /**
   * The leader's lease can no longer be trusted: stop acting now (nothing answers as leader from
   * here on), then exit. Its term's writes are guarded by its election key, so whatever of its
   * role is still in flight cannot land once the key is gone.
   */
  private async stepDown(reason: string): Promise<void> {
    if (this.steppingDown) return;
    this.steppingDown = true;
    this.health.set(serviceNames.master, 'NOT_SERVING');
    this.service.setRole(undefined);
    const role = this.role;
    this.role = undefined;
    this.logger.error('the election lease can no longer be trusted; stepping down', { reason });
    await withinMs(role?.stop(), stepDownGraceMs).catch((err: unknown) =>
      this.logger.warn('the leader role did not stop cleanly', { err }),
    );
    // If etcd still holds the lease, revoking it lets a follower lead without waiting for the TTL.
    if (this.lease) await this.dropLease(this.lease);
    this.logger.fatal('stepped down; exiting for a supervisor to start this master again', {
      code: exitCodes.leadershipLost,
    });
    this.onFatal(exitCodes.leadershipLost);
  }

  /** A new lease, retried with backoff while etcd is unreachable; undefined when stopping. */
  private async regrant(): Promise<LeaseKeeper | undefined> {
    const { signal } = this.stopping;
    try {
      return await retry(
        async (attempt) => {
          const lease = await this.grantLease();
          if (signal.aborted) {
            await this.dropLease(lease);
            return undefined;
          }
          this.logger.info('granted a new election lease', { lease: lease.id, attempt });
          return lease;
        },
        {
          policy: backoffPolicies.electionLease,
          signal,
          onRetry: ({ attempt, error }) =>
            this.logger.warn('could not grant an election lease; retrying', {
              attempt,
              err: error,
            }),
        },
      );
    } catch (err) {
      if (signal.aborted) return undefined;
      throw err;
    }
  }

  /** Revokes a lease that is done with (its election key goes at once), best effort. */
  private async dropLease(lease: LeaseKeeper): Promise<void> {
    await withinMs(lease.revoke(), revokeGraceMs).catch(() => lease.close());
  }

  /** Waits before retry number `attempt` (from 1); ends early, without an error, when stopping. */
  private backoff(attempt: number): Promise<void> {
    const ms = backoffDelayMs(backoffPolicies.electionLease, attempt);
    return abortableSleep(ms, this.stopping.signal).catch(() => undefined);
  }
}

/** `work`, or a rejection after `ms` (`work` then goes on unobserved). Undefined resolves at once. */
function withinMs(work: Promise<void> | undefined, ms: number): Promise<void> {
  if (!work) return Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not finish within ${ms} ms`)), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
