import { sharedFlagTable, units } from './flag-table';

/**
 * The flags the pserver and the master both take, written once: name, unit, parser and, where
 * the two agree, help line and default. Each app's table spreads these and adds what it says of
 * its own (its port, what `--consistency` means for it); both read the values the same way,
 * checked by each app's `config.spec.ts` on `libs/config/testdata/shared-flags.json`.
 */
export const sharedFlags = sharedFlagTable({
  host: {
    kind: 'text',
    flags: '--host <address>',
    help: 'address to listen on',
    default: '127.0.0.1',
  },
  /** Each app has its own default port. */
  port: {
    kind: 'integer',
    flags: '--port <port>',
    help: 'gRPC port (0 picks a free one)',
    min: 0,
    max: 65_535,
  },
  metricsPort: {
    kind: 'integer',
    flags: '--metrics-port <port>',
    help: 'serve Prometheus metrics at http://host:port/metrics (0 picks a free port)',
    min: 0,
    max: 65_535,
  },
  /** Who is sent to the address differs: trainers to a pserver, clients to the leading master. */
  advertiseAddress: { kind: 'text', flags: '--advertise-address <host:port>' },
  /** A pserver without endpoints runs standalone; a master always has some. */
  etcdEndpoints: {
    kind: 'list',
    flags: '--etcd-endpoints <urls>',
    help: 'comma-separated etcd client URLs',
  },
  job: {
    kind: 'text',
    flags: '--job <name>',
    help: 'the job (etcd keys under /pserver/<job>/)',
    default: 'default',
  },
  /** A standalone pserver's own mode, or the one a master writes for a cluster job. */
  consistency: { kind: 'text', flags: '--consistency <mode>', default: 'async' },
  replicasToAggregate: {
    kind: 'integer',
    flags: '--replicas-to-aggregate <k>',
    min: 0,
    max: 100_000,
    default: 0,
  },
  syncFailover: {
    kind: 'choice',
    flags: '--sync-failover <policy>',
    choices: ['rerun', 'continue'],
    default: 'rerun',
  },
  /** The pserver's membership lease, the master's election lease. */
  leaseTtlSeconds: {
    kind: 'integer',
    flags: '--lease-ttl-s <s>',
    min: 1,
    max: 600,
    default: 5,
    unit: units.seconds,
  },
  /** Each app has its own default (and the master a lower maximum). */
  shutdownGraceMs: {
    kind: 'integer',
    flags: '--shutdown-grace-ms <ms>',
    help: 'time in-flight calls get to finish on SIGTERM',
    min: 0,
    max: 3_600_000,
    unit: units.ms,
  },
  exitOnStdinClose: {
    kind: 'switch',
    flags: '--exit-on-stdin-close',
    help: 'exit when standard input closes (set by supervisors)',
    hidden: true,
  },
});
