import os from 'node:os';
import { Command } from 'commander';
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
import { parseConsistency, type JobConsistency } from '@pserver/coordination';
import { defaultBlockSize } from '@pserver/proto';

/**
 * The master's flags, each once, by the config field it fills (`MASTER_*` variables, in this
 * order in `--help`); the flags it shares with the pserver are `sharedFlags`'.
 */
export const masterFlags = flagTable({
  host: sharedFlags.host,
  port: { ...sharedFlags.port, default: 8200 },
  /** Where Prometheus metrics are served (`GET /metrics`), when given; 0 picks a free port. */
  metricsPort: sharedFlags.metricsPort,
  /** The address followers send clients to (default host:port). */
  advertiseAddress: {
    ...sharedFlags.advertiseAddress,
    help: 'the address clients are sent to (default: host:port)',
  },
  etcdEndpoints: { ...sharedFlags.etcdEndpoints, default: ['http://127.0.0.1:2379'] },
  job: sharedFlags.job,
  /** Written to `config/desired` when absent; changed later only by the admin RPC. */
  desiredPservers: {
    kind: 'integer',
    flags: '--desired-pservers <n>',
    help: 'the shard count, written if the job has none yet',
    min: 1,
    max: 100_000,
  },
  /** Written to `config/block-size` when absent; fixed for the life of the job. */
  blockSize: {
    kind: 'integer',
    flags: '--block-size <elements>',
    help: 'placement block size, written if the job has none yet',
    min: 1,
    max: 2 ** 30,
    default: defaultBlockSize,
    unit: units.elements,
  },
  /** Written to `config/replicas` when absent: replicas kept of each shard besides its primary. */
  replicas: {
    kind: 'integer',
    flags: '--replicas <n>',
    help: 'replicas of each shard besides its primary, written if the job has none yet (0: restore from checkpoints)',
    min: 0,
    max: 16,
    default: 0,
  },
  consistency: {
    ...sharedFlags.consistency,
    help: "the job's consistency mode, written if the job has none yet: async (apply pushes on arrival), sync (synchronous steps over the live trainers) or ssp:<s> (bounded staleness s)",
  },
  replicasToAggregate: {
    ...sharedFlags.replicasToAggregate,
    help: 'sync: contributions that close a step, written with the mode (0: every live trainer; fewer: the rest are backups)',
  },
  syncFailover: {
    ...sharedFlags.syncFailover,
    help: 'sync: a failover re-runs the step open on the shard with every contribution re-sent (rerun), or closes it without those lost (continue); written with the mode',
  },
  /** The election lease's TTL. */
  leaseTtlSeconds: { ...sharedFlags.leaseTtlSeconds, help: 'election lease TTL' },
  /** A trainer session ends after this long without KeepAlive. */
  sessionTtlSeconds: {
    kind: 'integer',
    flags: '--session-ttl-s <s>',
    help: 'trainer session TTL',
    min: 1,
    max: 3600,
    default: 10,
    unit: units.seconds,
  },
  relistIntervalMs: {
    kind: 'integer',
    flags: '--relist-interval-ms <ms>',
    help: 'full re-read of the job state even without events',
    min: 100,
    max: 600_000,
    default: 5_000,
    unit: units.ms,
  },
  shutdownGraceMs: { ...sharedFlags.shutdownGraceMs, max: 600_000, default: 5_000 },
  exitOnStdinClose: sharedFlags.exitOnStdinClose,
});

/** Flags that `loadConfig` turns into the job's consistency mode. */
type DerivedFrom = 'consistency' | 'replicasToAggregate' | 'syncFailover';

/** Everything the master reads from its command line and environment, parsed and checked. */
export interface MasterConfig
  extends Omit<FlagValues<typeof masterFlags>, DerivedFrom>, LogSettings {
  /** TLS and access control of the gRPC server (SECURITY.md). */
  security: ServerSecuritySettings;
  /** TLS and user for etcd. */
  etcdSecurity: EtcdSecuritySettings;
  /** Written to `config/consistency` when absent: the job's consistency mode, fixed for its life. */
  consistency: JobConsistency;
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
    );
  addFlags(program, 'MASTER', masterFlags, serverSecurityFlags, etcdSecurityFlags, logFlags);
  program.parse(argv, { from: 'node' });
  const fail = (message: string): never => program.error(message);
  const {
    consistency: mode,
    replicasToAggregate,
    syncFailover,
    ...flags
  } = flagValues(program, masterFlags);
  let consistency: JobConsistency;
  try {
    consistency = parseConsistency(mode, replicasToAggregate, syncFailover);
  } catch (err) {
    return fail(`error: ${(err as Error).message}`);
  }
  if (replicasToAggregate > 0 && consistency.mode !== 'sync')
    fail(`error: --replicas-to-aggregate is for --consistency sync, got ${mode}`);
  if (syncFailover !== 'rerun' && consistency.mode !== 'sync')
    fail(`error: --sync-failover is for --consistency sync, got ${mode}`);
  return {
    ...flags,
    consistency,
    name: `${os.hostname()}-${process.pid}`,
    security: serverSecuritySettings(flagValues(program, serverSecurityFlags), fail),
    etcdSecurity: etcdSecuritySettings(flagValues(program, etcdSecurityFlags), fail),
    ...logSettings(flagValues(program, logFlags)),
  };
}
