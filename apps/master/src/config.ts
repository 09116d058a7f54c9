import os from 'node:os';
import { Command, Option } from 'commander';
import {
  etcdSecurityOptions,
  etcdSecuritySettings,
  integerOption,
  versionLine,
  listOption,
  logOptions,
  logSettings,
  serverSecurityOptions,
  serverSecuritySettings,
  type EtcdSecuritySettings,
  type LogSettings,
  type ServerSecuritySettings,
} from '@pserver/config';
import { parseConsistency, type JobConsistency } from '@pserver/coordination';
import { defaultBlockSize } from '@pserver/proto';

/** Everything the master reads from its command line and environment, parsed and checked. */
export interface MasterConfig extends LogSettings {
  /** TLS and access control of the gRPC server (SECURITY.md). */
  security: ServerSecuritySettings;
  /** TLS and user for etcd. */
  etcdSecurity: EtcdSecuritySettings;
  host: string;
  port: number;
  /** Where Prometheus metrics are served (`GET /metrics`), when given; 0 picks a free port. */
  metricsPort: number | undefined;
  /** The address followers send clients to (default host:port). */
  advertiseAddress: string | undefined;
  etcdEndpoints: string[];
  job: string;
  /** Written to `config/desired` when absent; changed later only by the admin RPC. */
  desiredPservers: number | undefined;
  /** Written to `config/block-size` when absent; fixed for the life of the job. */
  blockSize: number;
  /** Written to `config/replicas` when absent: replicas kept of each shard besides its primary. */
  replicas: number;
  /** Written to `config/consistency` when absent: the job's consistency mode, fixed for its life. */
  consistency: JobConsistency;
  /** The election lease's TTL. */
  leaseTtlSeconds: number;
  /** A trainer session ends after this long without KeepAlive. */
  sessionTtlSeconds: number;
  relistIntervalMs: number;
  shutdownGraceMs: number;
  exitOnStdinClose: boolean;
  name: string;
}

/**
 * Parses flags (`argv` as in `process.argv`), falling back to `MASTER_*` environment variables,
 * which commander reads from `process.env`, and then to defaults.
 */
export function loadConfig(argv: string[]): MasterConfig {
  const program = new Command('master')
    .version(versionLine('master'), '--version', 'print the version and exit')
    .description(
      'The job master: elects a leader among its replicas through etcd, assigns shard indices to\n' +
        'pservers, keeps the trainer registry and elects the trainer that initializes the model.',
    )
    .addOption(
      new Option('--host <address>', 'address to listen on')
        .env('MASTER_HOST')
        .default('127.0.0.1'),
    )
    .addOption(
      integerOption(
        '--port <port>',
        'gRPC port (0 picks a free one)',
        'MASTER_PORT',
        8200,
        0,
        65_535,
      ),
    )
    .addOption(
      integerOption(
        '--metrics-port <port>',
        'serve Prometheus metrics at http://host:port/metrics (0 picks a free port)',
        'MASTER_METRICS_PORT',
        undefined,
        0,
        65_535,
      ),
    )
    .addOption(
      new Option(
        '--advertise-address <host:port>',
        'the address clients are sent to (default: host:port)',
      ).env('MASTER_ADVERTISE_ADDRESS'),
    )
    .addOption(
      listOption(
        '--etcd-endpoints <urls>',
        'comma-separated etcd client URLs',
        'MASTER_ETCD_ENDPOINTS',
      ).default(['http://127.0.0.1:2379']),
    )
    .addOption(
      new Option('--job <name>', 'the job (etcd keys under /pserver/<job>/)')
        .env('MASTER_JOB')
        .default('default'),
    )
    .addOption(
      integerOption(
        '--desired-pservers <n>',
        'the shard count, written if the job has none yet',
        'MASTER_DESIRED_PSERVERS',
        undefined,
        1,
        100_000,
      ),
    )
    .addOption(
      integerOption(
        '--block-size <elements>',
        'placement block size, written if the job has none yet',
        'MASTER_BLOCK_SIZE',
        defaultBlockSize,
        1,
        2 ** 30,
      ),
    )
    .addOption(
      integerOption(
        '--replicas <n>',
        'replicas of each shard besides its primary, written if the job has none yet (0: restore from checkpoints)',
        'MASTER_REPLICAS',
        0,
        0,
        16,
      ),
    )
    .addOption(
      new Option(
        '--consistency <mode>',
        "the job's consistency mode, written if the job has none yet: async (apply pushes on arrival), sync (synchronous steps over the live trainers) or ssp:<s> (bounded staleness s)",
      )
        .env('MASTER_CONSISTENCY')
        .default('async'),
    )
    .addOption(
      integerOption(
        '--replicas-to-aggregate <k>',
        'sync: contributions that close a step, written with the mode (0: every live trainer; fewer: the rest are backups)',
        'MASTER_REPLICAS_TO_AGGREGATE',
        0,
        0,
        100_000,
      ),
    )
    .addOption(
      new Option(
        '--sync-failover <policy>',
        'sync: a failover re-runs the step open on the shard with every contribution re-sent (rerun), or closes it without those lost (continue); written with the mode',
      )
        .env('MASTER_SYNC_FAILOVER')
        .choices(['rerun', 'continue'])
        .default('rerun'),
    )
    .addOption(
      integerOption('--lease-ttl-s <s>', 'election lease TTL', 'MASTER_LEASE_TTL_S', 5, 1, 600),
    )
    .addOption(
      integerOption(
        '--session-ttl-s <s>',
        'trainer session TTL',
        'MASTER_SESSION_TTL_S',
        10,
        1,
        3600,
      ),
    )
    .addOption(
      integerOption(
        '--relist-interval-ms <ms>',
        'full re-read of the job state even without events',
        'MASTER_RELIST_INTERVAL_MS',
        5_000,
        100,
        600_000,
      ),
    )
    .addOption(
      integerOption(
        '--shutdown-grace-ms <ms>',
        'time in-flight calls get to finish on SIGTERM',
        'MASTER_SHUTDOWN_GRACE_MS',
        5_000,
        0,
        600_000,
      ),
    )
    .addOption(
      new Option('--exit-on-stdin-close', 'exit when standard input closes (set by supervisors)')
        .env('MASTER_EXIT_ON_STDIN_CLOSE')
        .hideHelp(),
    );
  for (const option of [
    ...serverSecurityOptions('MASTER'),
    ...etcdSecurityOptions('MASTER'),
    ...logOptions('MASTER'),
  ])
    program.addOption(option);
  program.parse(argv, { from: 'node' });
  const o = program.opts<{
    host: string;
    port: number;
    metricsPort?: number;
    advertiseAddress?: string;
    etcdEndpoints: string[];
    job: string;
    desiredPservers?: number;
    blockSize: number;
    replicas: number;
    consistency: string;
    replicasToAggregate: number;
    syncFailover: string;
    leaseTtlS: number;
    sessionTtlS: number;
    relistIntervalMs: number;
    shutdownGraceMs: number;
    exitOnStdinClose?: boolean;
    logLevel: string;
    logFormat?: string;
    tlsCert?: string;
    tlsKey?: string;
    tlsClientCa?: string;
    authConfig?: string;
    etcdCa?: string;
    etcdCert?: string;
    etcdKey?: string;
    etcdUser?: string;
    etcdPasswordFile?: string;
  }>();
  const fail = (message: string): never => program.error(message);
  let consistency: JobConsistency;
  try {
    consistency = parseConsistency(o.consistency, o.replicasToAggregate, o.syncFailover);
  } catch (err) {
    return program.error(`error: ${(err as Error).message}`);
  }
  if (o.replicasToAggregate > 0 && consistency.mode !== 'sync')
    program.error(`error: --replicas-to-aggregate is for --consistency sync, got ${o.consistency}`);
  if (o.syncFailover !== 'rerun' && consistency.mode !== 'sync')
    program.error(`error: --sync-failover is for --consistency sync, got ${o.consistency}`);
  return {
    host: o.host,
    port: o.port,
    metricsPort: o.metricsPort,
    advertiseAddress: o.advertiseAddress,
    etcdEndpoints: o.etcdEndpoints,
    job: o.job,
    desiredPservers: o.desiredPservers,
    blockSize: o.blockSize,
    replicas: o.replicas,
    consistency,
    leaseTtlSeconds: o.leaseTtlS,
    sessionTtlSeconds: o.sessionTtlS,
    relistIntervalMs: o.relistIntervalMs,
    shutdownGraceMs: o.shutdownGraceMs,
    exitOnStdinClose: o.exitOnStdinClose ?? false,
    name: `${os.hostname()}-${process.pid}`,
    security: serverSecuritySettings(o, fail),
    etcdSecurity: etcdSecuritySettings(o, fail),
    ...logSettings(o),
  };
}
