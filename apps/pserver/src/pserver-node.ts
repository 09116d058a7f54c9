import { Server } from '@grpc/grpc-js';
import type { Logger } from '@pserver/logging';
import { bindServer, HealthService, shutdownServer } from '@pserver/rpc';
import type { PserverConfig } from './config';

/** The pserver process: owns its gRPC server and health status; `stop()` undoes `start()`. */
export class PserverNode {
  private readonly server = new Server();
  private readonly health = new HealthService(['pserver.v1.ParameterServer']);
  private port: number | undefined;

  constructor(
    private readonly config: PserverConfig,
    private readonly logger: Logger,
  ) {
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
    this.logger.info('listening', { address: this.address, mode: 'standalone (no etcd)' });
  }

  async stop(): Promise<void> {
    this.health.setAll('NOT_SERVING');
    const graceful = await shutdownServer(this.server, this.config.shutdownGraceMs);
    this.logger.info('stopped', { graceful });
  }
}
