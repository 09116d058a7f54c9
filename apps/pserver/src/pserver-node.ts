import type { Server, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Logger } from '@pserver/logging';
import {
  bindServer,
  createGrpcServer,
  HealthService,
  parameterServerService,
  serviceNames,
  shutdownServer,
} from '@pserver/rpc';
import type { PserverConfig } from './config';
import { AdmissionControl } from './service/admission';
import { FixedEpochGuard } from './service/epoch-guard';
import { ParameterService } from './service/parameter-service';
import { Shard } from './service/shard';
import { parameterServerHandlers } from './transport/parameter-server-handlers';

/** The pserver process: owns its shard, gRPC server and health; `stop()` undoes `start()`. */
export class PserverNode {
  private readonly server: Server;
  private readonly health = new HealthService([serviceNames.parameterServer]);
  private readonly service: ParameterService;
  private port: number | undefined;

  constructor(
    private readonly config: PserverConfig,
    private readonly logger: Logger,
  ) {
    const shard = new Shard(config.index, config.shards, undefined);
    // Until checkpoints keep a counter, the start time stands for the epoch: it grows with every
    // restart, so trainers see that a restarted shard lost its state.
    const epoch = new FixedEpochGuard(Date.now());
    this.service = new ParameterService({
      shard,
      epoch,
      admission: new AdmissionControl(config.maxPushBytesInFlight),
      mode: 'SHARD_MODE_STANDALONE',
    });
    this.server = createGrpcServer({
      maxMessageBytes: config.maxMessageBytes,
      flowControlWindowBytes: config.flowControlWindowBytes,
    });
    this.server.addService(
      parameterServerService,
      parameterServerHandlers(this.service, logger) as unknown as UntypedServiceImplementation,
    );
    this.health.addTo(this.server);
  }

  /** The bound address, once started. */
  get address(): string {
    if (this.port === undefined) throw new Error('PserverNode: not started');
    return `${this.config.host}:${this.port}`;
  }

  async start(): Promise<void> {
    this.port = await bindServer(this.server, this.config.host, this.config.port);
    this.health.setAll('SERVING');
    this.logger.info('listening', {
      address: this.address,
      mode: 'standalone (no etcd)',
      shard: `${this.config.index} of ${this.config.shards}`,
    });
  }

  /** NOT_SERVING, refuse changes, let calls in flight finish (up to the grace period), stop. */
  async stop(): Promise<void> {
    this.health.setAll('NOT_SERVING');
    this.service.beginShutdown();
    const graceful = await shutdownServer(this.server, this.config.shutdownGraceMs);
    this.logger.info('stopped', { graceful });
  }
}
