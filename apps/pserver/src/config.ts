import os from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { isWritePoint, type WritePoint } from '@pserver/checkpoint';
import type { JobConsistency } from '@pserver/coordination';
import { standaloneConsistency } from './consistency/consistency';

/**
 * Where a failpoint can fire: a checkpoint write point, right after a shard was recovered, or a
 * replica's answer to a forward.
 */
export type FailpointName = WritePoint | 'after-recovery' | 'forward';
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

/** Everything the pserver reads from its command line and environment, parsed and checked. */
export interface PserverConfig extends LogSettings {
  /** TLS and access control of the gRPC server (SECURITY.md). */
  security: ServerSecuritySettings;
  /** TLS and user for etcd. */
  etcdSecurity: EtcdSecuritySettings;
  host: string;
  port: number;
  /** Where Prometheus metrics are served (`GET /metrics`), when given; 0 picks a free port. */
  metricsPort: number | undefined;
  /** Standalone: this shard's index. */
  index: number;
  /** Standalone: the job's shard count. */
  shards: number;
  /** Standalone: the job's consistency mode (`--consistency`); cluster jobs keep theirs in etcd. */
  consistency: JobConsistency;
  /** Standalone SYNC and SSP: the roster, trainers 1..n (`--sync-trainers`). */
  syncTrainers: number;
  /** Cluster mode when given: the master assigns the index through etcd. */
  etcdEndpoints: string[] | undefined;
  job: string;
  /** Cluster mode: this process's name among the job's pservers. */
  member: string;
  /** Cluster mode: the address registered for trainers (default host:port). */
  advertiseAddress: string | undefined;
  leaseTtlSeconds: number;
  maxMessageBytes: number;
  flowControlWindowBytes: number;
  maxPushBytesInFlight: number;
  /**
   * Who serves SendGrads, SendGradsStream and GetParams: the data path straight on HTTP/2
   * ('direct', the default) or grpc-js like every other method ('grpc-js').
   */
  dataPath: 'direct' | 'grpc-js';
  /** V8's old-generation growth between full collections, in percent; 0 leaves V8's own. */
  heapGrowingPercent: number;
  /** The checkpoint directory; this shard writes `<dir>/shard-<index>/` (shared by a job's pservers). */
  checkpointDir: string;
  checkpointIntervalMs: number;
  /** How often a primary sends its replicas a digest of the shard to compare (0: never). */
  replicaDigestIntervalMs: number;
  /** A replica that left a push unapplied this long is dropped by its primary. */
  replicaLagTimeoutMs: number;
  checkpointRetain: number;
  /** Deltas between full checkpoints of a shard with tables (0: every checkpoint full). */
  checkpointDeltas: number;
  /** Start empty even though committed checkpoints were all lost. */
  allowFreshStart: boolean;
  /** Step marks of trainers silent this long are forgotten (at checkpoints). */
  stepMarkRetentionMs: number;
  /**
   * Test setting: at this write-path point (or `after-recovery`: a shard recovered, not yet
   * served), SIGKILL the process, fail with ENOSPC once, or SIGSTOP it.
   */
  failpoint: { point: FailpointName; action: 'kill' | 'enospc' | 'stop' | 'stall' } | undefined;
  /** How long SIGTERM lets in-flight calls finish before they are cancelled. */
  shutdownGraceMs: number;
  /** Exit when standard input closes (a supervising process died). */
  exitOnStdinClose: boolean;
}

const mib = 1024 * 1024;

/**
 * Parses flags (`argv` as in `process.argv`), falling back to `PSERVER_*` environment variables,
 * which commander reads from `process.env`, and then to defaults.
 */
export function loadConfig(argv: string[]): PserverConfig {
  const program = new Command('pserver')
    .version(versionLine('pserver'), '--version', 'print the version and exit')
    .description(
      'A parameter server shard: holds tensors, applies optimizer updates, serves them over gRPC.\n' +
        'With --etcd-endpoints it joins a job and the master assigns its index; without, it runs\n' +
        'standalone as shard --index of --shards.',
    )
    .addOption(
      new Option('--host <address>', 'address to listen on')
        .env('PSERVER_HOST')
        .default('127.0.0.1'),
    )
    .addOption(
      integerOption(
        '--port <port>',
        'gRPC port (0 picks a free one)',
        'PSERVER_PORT',
        8100,
        0,
        65_535,
      ),
    )
    .addOption(
      integerOption(
        '--metrics-port <port>',
        'serve Prometheus metrics at http://host:port/metrics (0 picks a free port)',
        'PSERVER_METRICS_PORT',
        undefined,
        0,
        65_535,
      ),
    )
    .addOption(
      integerOption(
        '--index <i>',
        "standalone: this shard's index",
        'PSERVER_INDEX',
        0,
        0,
        1_000_000,
      ),
    )
    .addOption(
      integerOption(
        '--shards <n>',
        'standalone: the job’s shard count',
        'PSERVER_SHARDS',
        1,
        1,
        1_000_000,
      ),
    )
    .addOption(
      new Option(
        '--consistency <mode>',
        'standalone: async (apply pushes on arrival), sync (synchronous steps) or ssp:<s> (bounded staleness s); the same on every shard',
      )
        .env('PSERVER_CONSISTENCY')
        .default('async'),
    )
    .addOption(
      integerOption(
        '--sync-trainers <n>',
        'standalone sync and ssp: the trainers of every step, ids 1..n',
        'PSERVER_SYNC_TRAINERS',
        0,
        0,
        100_000,
      ),
    )
    .addOption(
      integerOption(
        '--replicas-to-aggregate <k>',
        'standalone sync: contributions that close a step (0: all trainers; fewer: the rest are backups)',
        'PSERVER_REPLICAS_TO_AGGREGATE',
        0,
        0,
        100_000,
      ),
    )
    .addOption(
      new Option(
        '--sync-failover <policy>',
        'standalone sync: after a restart, the step open on the shard is re-run with every contribution re-sent (rerun), or closed without those lost (continue)',
      )
        .env('PSERVER_SYNC_FAILOVER')
        .choices(['rerun', 'continue'])
        .default('rerun'),
    )
    .addOption(
      listOption(
        '--etcd-endpoints <urls>',
        'cluster mode: comma-separated etcd client URLs',
        'PSERVER_ETCD_ENDPOINTS',
      ),
    )
    .addOption(
      new Option('--job <name>', 'cluster mode: the job (etcd keys under /pserver/<job>/)')
        .env('PSERVER_JOB')
        .default('default'),
    )
    .addOption(
      new Option(
        '--member <name>',
        'cluster mode: this pserver’s name (default: host name and pid)',
      ).env('PSERVER_MEMBER'),
    )
    .addOption(
      new Option(
        '--advertise-address <host:port>',
        'cluster mode: the address trainers use (default: host:port)',
      ).env('PSERVER_ADVERTISE_ADDRESS'),
    )
    .addOption(
      integerOption(
        '--lease-ttl-s <s>',
        'cluster mode: etcd lease TTL',
        'PSERVER_LEASE_TTL_S',
        5,
        1,
        600,
      ),
    )
    .addOption(
      integerOption(
        '--max-message-mb <MiB>',
        'largest gRPC message received or sent',
        'PSERVER_MAX_MESSAGE_MB',
        128,
        1,
        2047,
      ),
    )
    .addOption(
      integerOption(
        '--flow-control-window-mb <MiB>',
        'HTTP/2 receive window per connection and stream',
        'PSERVER_FLOW_CONTROL_WINDOW_MB',
        32,
        1,
        1024,
      ),
    )
    .addOption(
      new Option(
        '--data-path <server>',
        'who serves pushes and pulls: direct (straight on HTTP/2) or grpc-js',
      )
        .env('PSERVER_DATA_PATH')
        .choices(['direct', 'grpc-js'])
        .default('direct'),
    )
    .addOption(
      integerOption(
        '--heap-growing-percent <percent>',
        "V8's old-generation growth between full collections (0: V8's own choice)",
        'PSERVER_HEAP_GROWING_PERCENT',
        300,
        0,
        10_000,
      ),
    )
    .addOption(
      integerOption(
        '--max-push-mb-in-flight <MiB>',
        'bytes of pushes staged at once; beyond: RESOURCE_EXHAUSTED',
        'PSERVER_MAX_PUSH_MB_IN_FLIGHT',
        1024,
        1,
        1_048_576,
      ),
    )
    .addOption(
      new Option(
        '--checkpoint-dir <dir>',
        'checkpoint directory (this shard uses <dir>/shard-<index>/)',
      )
        .env('PSERVER_CHECKPOINT_DIR')
        .default('checkpoints'),
    )
    .addOption(
      integerOption(
        '--checkpoint-interval-s <s>',
        'seconds between periodic checkpoints (when the shard changed)',
        'PSERVER_CHECKPOINT_INTERVAL_S',
        600,
        1,
        31_536_000,
      ),
    )
    .addOption(
      integerOption(
        '--replica-digest-interval-s <s>',
        'seconds between digests of the shard a primary sends its replicas to compare (0: never)',
        'PSERVER_REPLICA_DIGEST_INTERVAL_S',
        60,
        0,
        86_400,
      ),
    )
    .addOption(
      integerOption(
        '--replica-lag-timeout-s <s>',
        'a primary drops a replica (deletes its key) that left a push unapplied this long',
        'PSERVER_REPLICA_LAG_TIMEOUT_S',
        10,
        1,
        3_600,
      ),
    )
    .addOption(
      integerOption(
        '--step-mark-retention-h <hours>',
        'forget the step marks of trainers silent this long',
        'PSERVER_STEP_MARK_RETENTION_H',
        168,
        1,
        87_600,
      ),
    )
    .addOption(
      integerOption(
        '--checkpoint-retain <n>',
        'committed checkpoints kept',
        'PSERVER_CHECKPOINT_RETAIN',
        3,
        1,
        1000,
      ),
    )
    .addOption(
      integerOption(
        '--checkpoint-deltas <n>',
        'deltas (changed table rows only) between full checkpoints of a shard with tables; 0: all full',
        'PSERVER_CHECKPOINT_DELTAS',
        8,
        0,
        1000,
      ),
    )
    .addOption(
      new Option(
        '--allow-fresh-start',
        'start empty when every committed checkpoint is lost or corrupt',
      ).env('PSERVER_ALLOW_FRESH_START'),
    )
    .addOption(
      new Option(
        '--failpoint <point[:enospc|:stop|:stall]>',
        'testing only: at a checkpoint write point (or after-recovery, or forward), SIGKILL the process, fail with ENOSPC once, SIGSTOP it, or never answer',
      )
        .env('PSERVER_FAILPOINT')
        .argParser(parseFailpoint)
        .hideHelp(),
    )
    .addOption(
      new Option('--exit-on-stdin-close', 'exit when standard input closes (set by supervisors)')
        .env('PSERVER_EXIT_ON_STDIN_CLOSE')
        .hideHelp(),
    )
    .addOption(
      integerOption(
        '--shutdown-grace-ms <ms>',
        'time in-flight calls get to finish on SIGTERM',
        'PSERVER_SHUTDOWN_GRACE_MS',
        10_000,
        0,
        3_600_000,
      ),
    );
  for (const option of [
    ...serverSecurityOptions('PSERVER'),
    ...etcdSecurityOptions('PSERVER'),
    ...logOptions('PSERVER'),
  ])
    program.addOption(option);
  program.parse(argv, { from: 'node' });
  const o = program.opts<{
    host: string;
    port: number;
    metricsPort?: number;
    index: number;
    shards: number;
    consistency: string;
    syncTrainers: number;
    replicasToAggregate: number;
    syncFailover: string;
    etcdEndpoints?: string[];
    job: string;
    member?: string;
    advertiseAddress?: string;
    leaseTtlS: number;
    maxMessageMb: number;
    flowControlWindowMb: number;
    maxPushMbInFlight: number;
    dataPath: 'direct' | 'grpc-js';
    heapGrowingPercent: number;
    checkpointDir: string;
    checkpointIntervalS: number;
    replicaDigestIntervalS: number;
    replicaLagTimeoutS: number;
    checkpointRetain: number;
    checkpointDeltas: number;
    stepMarkRetentionH: number;
    allowFreshStart?: boolean;
    failpoint?: PserverConfig['failpoint'];
    exitOnStdinClose?: boolean;
    shutdownGraceMs: number;
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
  if (o.index >= o.shards) {
    program.error(
      `error: option '--index <i>' must be below --shards (${o.shards}), got ${o.index}`,
    );
  }
  let consistency: JobConsistency;
  try {
    consistency = standaloneConsistency(
      o.consistency,
      o.syncTrainers,
      o.replicasToAggregate,
      o.syncFailover,
    );
  } catch (err) {
    return program.error(`error: ${(err as Error).message}`);
  }
  if (consistency.mode !== 'async' && o.etcdEndpoints)
    program.error(
      `error: --consistency ${o.consistency} is for standalone pservers; a cluster job's mode is the master's --consistency`,
    );
  return {
    host: o.host,
    port: o.port,
    metricsPort: o.metricsPort,
    index: o.index,
    shards: o.shards,
    consistency,
    syncTrainers: o.syncTrainers,
    etcdEndpoints: o.etcdEndpoints,
    job: o.job,
    member: o.member ?? `${os.hostname()}-${process.pid}`,
    advertiseAddress: o.advertiseAddress,
    leaseTtlSeconds: o.leaseTtlS,
    maxMessageBytes: o.maxMessageMb * mib,
    flowControlWindowBytes: o.flowControlWindowMb * mib,
    maxPushBytesInFlight: o.maxPushMbInFlight * mib,
    dataPath: o.dataPath,
    heapGrowingPercent: o.heapGrowingPercent,
    checkpointDir: o.checkpointDir,
    checkpointIntervalMs: o.checkpointIntervalS * 1000,
    replicaDigestIntervalMs: o.replicaDigestIntervalS * 1000,
    replicaLagTimeoutMs: o.replicaLagTimeoutS * 1000,
    checkpointRetain: o.checkpointRetain,
    checkpointDeltas: o.checkpointDeltas,
    allowFreshStart: o.allowFreshStart ?? false,
    stepMarkRetentionMs: o.stepMarkRetentionH * 3_600_000,
    failpoint: o.failpoint,
    exitOnStdinClose: o.exitOnStdinClose ?? false,
    shutdownGraceMs: o.shutdownGraceMs,
    security: serverSecuritySettings(o, fail),
    etcdSecurity: etcdSecuritySettings(o, fail),
    ...logSettings(o),
  };
}

function parseFailpoint(value: string): PserverConfig['failpoint'] {
  const [point = '', action = 'kill'] = value.split(':');
  if (
    !(isWritePoint(point) || point === 'after-recovery' || point === 'forward') ||
    (action !== 'kill' && action !== 'enospc' && action !== 'stop' && action !== 'stall')
  ) {
    throw new InvalidArgumentError(
      `expected <write point, after-recovery or forward>[:enospc|:stop|:stall], got '${value}'.`,
    );
  }
  return { point, action };
}
