import type { Server, UntypedServiceImplementation } from '@grpc/grpc-js';
import { ManifestStore } from '@pserver/checkpoint';
import type { Logger } from '@pserver/logging';
import {
  addReflection,
  bindServer,
  createGrpcServer,
  HealthService,
  parameterServerService,
  serviceNames,
  shutdownServer,
} from '@pserver/rpc';
import type { PserverConfig } from './config';
import { failpointHook } from './failpoint';
import { AdmissionControl } from './service/admission';
import { Checkpointer } from './service/checkpointer';
import { FixedEpochGuard } from './service/epoch-guard';
import { ParameterService } from './service/parameter-service';
import { Shard } from './service/shard';
import { parameterServerHandlers } from './transport/parameter-server-handlers';

/** Exit codes a supervisor can tell apart. */
export const exitCodes = {
  ok: 0,
  failure: 1,
  /** Checkpoints were committed once and none is valid now (see --allow-fresh-start). */
  checkpointsLost: 3,
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
 * The pserver process: recovers its shard, then serves it; `stop()` undoes `start()` and takes a
 * final checkpoint, so no acknowledged push is lost on a graceful stop.
 */
export class PserverNode {
  private readonly health = new HealthService([serviceNames.parameterServer]);
  private server: Server | undefined;
  private checkpointer: Checkpointer | undefined;
  private service: ParameterService | undefined;
  private shard: Shard | undefined;
  private port: number | undefined;

  constructor(
    private readonly config: PserverConfig,
    private readonly logger: Logger,
  ) {}

  /** The bound address, once started. */
  get address(): string {
    if (this.port === undefined) throw new Error('PserverNode: not started');
    return `${this.config.host}:${this.port}`;
  }

  async start(): Promise<void> {
    const { config, logger } = this;
    // Opening the manifest raises the standalone epoch, durably, before anything is served.
    const store = await ManifestStore.open(config.checkpointDir, config.index, config.shards);
    const shard = new Shard(config.index, config.shards, undefined);
    const checkpointer = new Checkpointer({
      root: config.checkpointDir,
      shard,
      store,
      epoch: store.epoch,
      retain: config.checkpointRetain,
      logger: logger.child({ component: 'checkpoint' }),
      hook: failpointHook(config.failpoint, logger),
    });
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
      logger.warn('every committed checkpoint is lost; starting empty (--allow-fresh-start)', {
        broken: recovery.broken,
      });
    }
    this.shard = shard;
    this.checkpointer = checkpointer;
    this.service = new ParameterService({
      shard,
      epoch: new FixedEpochGuard(store.epoch),
      admission: new AdmissionControl(config.maxPushBytesInFlight),
      checkpointer,
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
    addReflection(this.server, [serviceNames.parameterServer]);
    this.port = await bindServer(this.server, config.host, config.port);
    checkpointer.startPeriodic(config.checkpointIntervalMs);
    this.health.setAll('SERVING');
    logger.info('listening', {
      address: this.address,
      mode: 'standalone (no etcd)',
      shard: `${config.index} of ${config.shards}`,
      shardEpoch: store.epoch,
      recovered: recovery.kind === 'restored' ? recovery.meta.path : undefined,
      checkpointDir: config.checkpointDir,
    });
  }

  /**
   * NOT_SERVING; refuse changes; let calls in flight finish (up to the grace period); stop the
   * periodic checkpoints; commit a final checkpoint if the shard changed since the last one.
   */
  async stop(): Promise<void> {
    this.health.setAll('NOT_SERVING');
    this.service?.beginShutdown();
    const graceful = this.server
      ? await shutdownServer(this.server, this.config.shutdownGraceMs)
      : true;
    if (this.checkpointer) {
      await this.checkpointer.stop();
      if (this.checkpointer.dirty) await this.checkpointer.save('shutdown');
    }
    this.logger.info('stopped', { graceful });
  }
}
