import os from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import { isWritePoint, type WritePoint } from '@pserver/checkpoint';
import type { JobConsistency } from '@pserver/coordination';
import { standaloneConsistency } from './consistency/consistency';
import {
  addFlags,
  etcdSecurityFlags,
  etcdSecuritySettings,
  flagTable,
  flagValues,
  logFlags,
  logSettings,
  serverSecurityFlags,
  serverSecuritySettings,
  sharedFlags,
  units,
  versionLine,
  type EtcdSecuritySettings,
  type FlagValues,
  type LogSettings,
  type ServerSecuritySettings,
} from '@pserver/config';

/**
 * Where a failpoint can fire: a checkpoint write point, right after a shard was recovered, or the
 * answer to a forward (a replica's, or a live move receiver's).
 */
export type FailpointName = WritePoint | 'after-recovery' | 'forward';

/** What a failpoint does at its point: SIGKILL, ENOSPC once, SIGSTOP, or never answer. */
export interface Failpoint {
  point: FailpointName;
  action: 'kill' | 'enospc' | 'stop' | 'stall';
}

/**
 * The pserver's flags, each once, by the config field it fills (`PSERVER_*` variables, in this
 * order in `--help`); the flags it shares with the master are `sharedFlags`'.
 */
export const pserverFlags = flagTable({
  host: sharedFlags.host,
  port: { ...sharedFlags.port, default: 8100 },
  /** Where Prometheus metrics are served (`GET /metrics`), when given; 0 picks a free port. */
  metricsPort: sharedFlags.metricsPort,
  /** Standalone: this shard's index. */
  index: {
    kind: 'integer',
    flags: '--index <i>',
    help: "standalone: this shard's index",
    min: 0,
    max: 1_000_000,
    default: 0,
  },
  /** Standalone: the job's shard count. */
  shards: {
    kind: 'integer',
    flags: '--shards <n>',
    help: 'standalone: the job’s shard count',
    min: 1,
    max: 1_000_000,
    default: 1,
  },
  consistency: {
    ...sharedFlags.consistency,
    help: 'standalone: async (apply pushes on arrival), sync (synchronous steps) or ssp:<s> (bounded staleness s); the same on every shard',
  },
  /** Standalone SYNC and SSP: the roster, trainers 1..n (`--sync-trainers`). */
  syncTrainers: {
    kind: 'integer',
    flags: '--sync-trainers <n>',
    help: 'standalone sync and ssp: the trainers of every step, ids 1..n',
    min: 0,
    max: 100_000,
    default: 0,
  },
  replicasToAggregate: {
    ...sharedFlags.replicasToAggregate,
    help: 'standalone sync: contributions that close a step (0: all trainers; fewer: the rest are backups)',
  },
  syncFailover: {
    ...sharedFlags.syncFailover,
    help: 'standalone sync: after a restart, the step open on the shard is re-run with every contribution re-sent (rerun), or closed without those lost (continue)',
  },
  /** Cluster mode when given: the master assigns the index through etcd. */
  etcdEndpoints: {
    ...sharedFlags.etcdEndpoints,
    help: `cluster mode: ${sharedFlags.etcdEndpoints.help}`,
  },
  job: { ...sharedFlags.job, help: `cluster mode: ${sharedFlags.job.help}` },
  member: {
    kind: 'text',
    flags: '--member <name>',
    help: 'cluster mode: this pserver’s name (default: host name and pid)',
  },
  /** Cluster mode: the address registered for trainers (default host:port). */
  advertiseAddress: {
    ...sharedFlags.advertiseAddress,
    help: 'cluster mode: the address trainers use (default: host:port)',
  },
  leaseTtlSeconds: { ...sharedFlags.leaseTtlSeconds, help: 'cluster mode: etcd lease TTL' },
  maxMessageBytes: {
    kind: 'integer',
    flags: '--max-message-mb <MiB>',
    help: 'largest gRPC message received or sent',
    min: 1,
    max: 2047,
    default: 128,
    unit: units.mibAsBytes,
  },
  flowControlWindowBytes: {
    kind: 'integer',
    flags: '--flow-control-window-mb <MiB>',
    help: 'HTTP/2 receive window per connection and stream',
    min: 1,
    max: 1024,
    default: 32,
    unit: units.mibAsBytes,
  },
  /**
   * Who serves SendGrads, SendGradsStream and GetParams: the data path straight on HTTP/2
   * ('direct', the default) or grpc-js like every other method ('grpc-js').
   */
  dataPath: {
    kind: 'choice',
    flags: '--data-path <server>',
    help: 'who serves pushes and pulls: direct (straight on HTTP/2) or grpc-js',
    choices: ['direct', 'grpc-js'],
    default: 'direct',
  },
  /** V8's old-generation growth between full collections, in percent; 0 leaves V8's own. */
  heapGrowingPercent: {
    kind: 'integer',
    flags: '--heap-growing-percent <percent>',
    help: "V8's old-generation growth between full collections (0: V8's own choice)",
    min: 0,
    max: 10_000,
    default: 300,
    unit: units.percent,
  },
  maxPushBytesInFlight: {
    kind: 'integer',
    flags: '--max-push-mb-in-flight <MiB>',
    help: 'bytes of pushes staged at once; beyond: RESOURCE_EXHAUSTED',
    min: 1,
    max: 1_048_576,
    default: 1024,
    unit: units.mibAsBytes,
  },
  /** The checkpoint directory; this shard writes `<dir>/shard-<index>/` (shared by a job's pservers). */
  checkpointDir: {
    kind: 'text',
    flags: '--checkpoint-dir <dir>',
    help: 'checkpoint directory (this shard uses <dir>/shard-<index>/)',
    default: 'checkpoints',
  },
  checkpointIntervalMs: {
    kind: 'integer',
    flags: '--checkpoint-interval-s <s>',
    help: 'seconds between periodic checkpoints (when the shard changed)',
    min: 1,
    max: 31_536_000,
    default: 600,
    unit: units.secondsAsMs,
  },
  /** How often a primary sends its replicas a digest of the shard to compare (0: never). */
  replicaDigestIntervalMs: {
    kind: 'integer',
    flags: '--replica-digest-interval-s <s>',
    help: 'seconds between digests of the shard a primary sends its replicas to compare (0: never)',
    min: 0,
    max: 86_400,
    default: 60,
    unit: units.secondsAsMs,
  },
  /** A replica that left a push unapplied this long is dropped by its primary. */
  replicaLagTimeoutMs: {
    kind: 'integer',
    flags: '--replica-lag-timeout-s <s>',
    help: 'a primary drops a replica (deletes its key) that left a push unapplied this long',
    min: 1,
    max: 3_600,
    default: 10,
    unit: units.secondsAsMs,
  },
  /**
   * A live change of the shard count is rolled back when a receiver has not copied its slices
   * and caught up with the pushes since within this long (the shards serve on at the old count).
   */
  moveReadyTimeoutMs: {
    kind: 'integer',
    flags: '--move-ready-timeout-s <s>',
    help: 'roll a live change of the shard count back when a receiver has not copied its slices and caught up within this long',
    min: 1,
    max: 3_600,
    default: 30,
    unit: units.secondsAsMs,
  },
  /** Step marks of trainers silent this long are forgotten (at checkpoints). */
  stepMarkRetentionMs: {
    kind: 'integer',
    flags: '--step-mark-retention-h <hours>',
    help: 'forget the step marks of trainers silent this long',
    min: 1,
    max: 87_600,
    default: 168,
    unit: units.hoursAsMs,
  },
  checkpointRetain: {
    kind: 'integer',
    flags: '--checkpoint-retain <n>',
    help: 'committed checkpoints kept',
    min: 1,
    max: 1000,
    default: 3,
  },
  /** Deltas between full checkpoints of a shard with tables (0: every checkpoint full). */
  checkpointDeltas: {
    kind: 'integer',
    flags: '--checkpoint-deltas <n>',
    help: 'deltas (changed table rows only) between full checkpoints of a shard with tables; 0: all full',
    min: 0,
    max: 1000,
    default: 8,
  },
  /** Start empty even though committed checkpoints were all lost. */
  allowFreshStart: {
    kind: 'switch',
    flags: '--allow-fresh-start',
    help: 'start empty when every committed checkpoint is lost or corrupt',
  },
  /**
   * Test setting: at this write-path point (or `after-recovery`: a shard recovered, not yet
   * served), SIGKILL the process, fail with ENOSPC once, or SIGSTOP it.
   */
  failpoint: {
    kind: 'parsed',
    flags: '--failpoint <point[:enospc|:stop|:stall]>',
    help: 'testing only: at a checkpoint write point (or after-recovery, or forward), SIGKILL the process, fail with ENOSPC once, SIGSTOP it, or never answer',
    parse: parseFailpoint,
    hidden: true,
  },
  /** Exit when standard input closes (a supervising process died). */
  exitOnStdinClose: sharedFlags.exitOnStdinClose,
  /** How long SIGTERM lets in-flight calls finish before they are cancelled. */
  shutdownGraceMs: { ...sharedFlags.shutdownGraceMs, default: 10_000 },
});

/** Flags that `loadConfig` turns into other fields: the consistency mode, the member's name. */
type DerivedFrom = 'consistency' | 'replicasToAggregate' | 'syncFailover' | 'member';

/** Everything the pserver reads from its command line and environment, parsed and checked. */
export interface PserverConfig
  extends Omit<FlagValues<typeof pserverFlags>, DerivedFrom>, LogSettings {
  /** TLS and access control of the gRPC server (SECURITY.md). */
  security: ServerSecuritySettings;
  /** TLS and user for etcd. */
  etcdSecurity: EtcdSecuritySettings;
  /** Standalone: the job's consistency mode (`--consistency`); cluster jobs keep theirs in etcd. */
  consistency: JobConsistency;
  /** Cluster mode: this process's name among the job's pservers. */
  member: string;
}

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
    );
  addFlags(program, 'PSERVER', pserverFlags, serverSecurityFlags, etcdSecurityFlags, logFlags);
  program.parse(argv, { from: 'node' });
  const fail = (message: string): never => program.error(message);
  const {
    consistency: mode,
    replicasToAggregate,
    syncFailover,
    member,
    ...flags
  } = flagValues(program, pserverFlags);
  if (flags.index >= flags.shards)
    fail(
      `error: option '--index <i>' must be below --shards (${flags.shards}), got ${flags.index}`,
    );
  let consistency: JobConsistency;
  try {
    consistency = standaloneConsistency(
      mode,
      flags.syncTrainers,
      replicasToAggregate,
      syncFailover,
    );
  } catch (err) {
    return fail(`error: ${(err as Error).message}`);
  }
  if (consistency.mode !== 'async' && flags.etcdEndpoints)
    fail(
      `error: --consistency ${mode} is for standalone pservers; a cluster job's mode is the master's --consistency`,
    );
  return {
    ...flags,
    consistency,
    member: member ?? `${os.hostname()}-${process.pid}`,
    security: serverSecuritySettings(flagValues(program, serverSecurityFlags), fail),
    etcdSecurity: etcdSecuritySettings(flagValues(program, etcdSecurityFlags), fail),
    ...logSettings(flagValues(program, logFlags)),
  };
}

function parseFailpoint(value: string): Failpoint {
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
