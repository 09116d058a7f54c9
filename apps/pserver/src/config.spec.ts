import os from 'node:os';
import { defaultLogFormat } from '@pserver/logging';
import { sharedFlagVectors } from '@pserver/testing';
import { loadConfig, type PserverConfig } from './config';

const mib = 1024 * 1024;

/** `loadConfig` on these arguments with these variables, and no other `PSERVER_*` one. */
function load(args: string[], env: Record<string, string> = {}): PserverConfig {
  const saved = process.env;
  process.env = Object.fromEntries(
    Object.entries(saved).filter(([name]) => !name.startsWith('PSERVER_')),
  );
  Object.assign(process.env, env);
  try {
    return loadConfig(['node', 'pserver', ...args]);
  } finally {
    process.env = saved;
  }
}

describe('the pserver config', () => {
  it('gives every default', () => {
    expect(load([])).toEqual({
      host: '127.0.0.1',
      port: 8100,
      metricsPort: undefined,
      index: 0,
      shards: 1,
      consistency: { mode: 'async' },
      syncTrainers: 0,
      etcdEndpoints: undefined,
      job: 'default',
      member: `${os.hostname()}-${process.pid}`,
      advertiseAddress: undefined,
      leaseTtlSeconds: 5,
      maxMessageBytes: 128 * mib,
      flowControlWindowBytes: 32 * mib,
      dataPath: 'direct',
      heapGrowingPercent: 300,
      maxPushBytesInFlight: 1024 * mib,
      checkpointDir: 'checkpoints',
      checkpointIntervalMs: 600_000,
      replicaDigestIntervalMs: 60_000,
      replicaLagTimeoutMs: 10_000,
      moveReadyTimeoutMs: 30_000,
      stepMarkRetentionMs: 168 * 3_600_000,
      checkpointRetain: 3,
      checkpointDeltas: 8,
      allowFreshStart: false,
      failpoint: undefined,
      exitOnStdinClose: false,
      shutdownGraceMs: 10_000,
      security: { tls: undefined, authConfigFile: undefined },
      etcdSecurity: {
        caFile: undefined,
        certFile: undefined,
        keyFile: undefined,
        username: undefined,
        passwordFile: undefined,
      },
      logLevel: 'info',
      logFormat: defaultLogFormat(),
    });
  });

  it('reads every PSERVER_* variable, in the units of its flag', () => {
    const standalone = {
      PSERVER_HOST: '0.0.0.0',
      PSERVER_PORT: '9100',
      PSERVER_METRICS_PORT: '9400',
      PSERVER_INDEX: '2',
      PSERVER_SHARDS: '3',
      PSERVER_CONSISTENCY: 'sync',
      PSERVER_SYNC_TRAINERS: '4',
      PSERVER_REPLICAS_TO_AGGREGATE: '3',
      PSERVER_SYNC_FAILOVER: 'continue',
      PSERVER_MAX_MESSAGE_MB: '64',
      PSERVER_FLOW_CONTROL_WINDOW_MB: '16',
      PSERVER_DATA_PATH: 'grpc-js',
      PSERVER_HEAP_GROWING_PERCENT: '0',
      PSERVER_MAX_PUSH_MB_IN_FLIGHT: '512',
      PSERVER_CHECKPOINT_DIR: '/var/lib/pserver',
      PSERVER_CHECKPOINT_INTERVAL_S: '30',
      PSERVER_REPLICA_DIGEST_INTERVAL_S: '0',
      PSERVER_REPLICA_LAG_TIMEOUT_S: '20',
      PSERVER_STEP_MARK_RETENTION_H: '2',
      PSERVER_CHECKPOINT_RETAIN: '5',
      PSERVER_CHECKPOINT_DELTAS: '0',
      PSERVER_ALLOW_FRESH_START: '1',
      PSERVER_FAILPOINT: 'after-recovery:stop',
      PSERVER_EXIT_ON_STDIN_CLOSE: '1',
      PSERVER_SHUTDOWN_GRACE_MS: '2500',
      PSERVER_TLS_CERT: 'server.pem',
      PSERVER_TLS_KEY: 'server-key.pem',
      PSERVER_TLS_CLIENT_CA: 'ca.pem',
      PSERVER_AUTH_CONFIG: 'auth.json',
      PSERVER_LOG_LEVEL: 'warn',
      PSERVER_LOG_FORMAT: 'json',
    };
    expect(load([], standalone)).toEqual({
      ...load([]),
      host: '0.0.0.0',
      port: 9100,
      metricsPort: 9400,
      index: 2,
      shards: 3,
      consistency: { mode: 'sync', replicasToAggregate: 3, failover: 'continue' },
      syncTrainers: 4,
      maxMessageBytes: 64 * mib,
      flowControlWindowBytes: 16 * mib,
      dataPath: 'grpc-js',
      heapGrowingPercent: 0,
      maxPushBytesInFlight: 512 * mib,
      checkpointDir: '/var/lib/pserver',
      checkpointIntervalMs: 30_000,
      replicaDigestIntervalMs: 0,
      replicaLagTimeoutMs: 20_000,
      moveReadyTimeoutMs: 30_000,
      stepMarkRetentionMs: 7_200_000,
      checkpointRetain: 5,
      checkpointDeltas: 0,
      allowFreshStart: true,
      failpoint: { point: 'after-recovery', action: 'stop' },
      exitOnStdinClose: true,
      shutdownGraceMs: 2500,
      security: {
        tls: { certFile: 'server.pem', keyFile: 'server-key.pem', clientCaFile: 'ca.pem' },
        authConfigFile: 'auth.json',
      },
      logLevel: 'warn',
      logFormat: 'json',
    });
    const cluster = {
      PSERVER_ETCD_ENDPOINTS: 'https://etcd-0:2379,https://etcd-1:2379',
      PSERVER_JOB: 'mnist',
      PSERVER_MEMBER: 'pserver-0',
      PSERVER_ADVERTISE_ADDRESS: 'pserver-0.pserver:8100',
      PSERVER_LEASE_TTL_S: '10',
      PSERVER_ETCD_CA: 'etcd-ca.pem',
      PSERVER_ETCD_CERT: 'etcd.pem',
      PSERVER_ETCD_KEY: 'etcd-key.pem',
      PSERVER_ETCD_USER: 'pserver',
      PSERVER_ETCD_PASSWORD_FILE: 'password',
    };
    expect(load([], cluster)).toEqual({
      ...load([]),
      etcdEndpoints: ['https://etcd-0:2379', 'https://etcd-1:2379'],
      job: 'mnist',
      member: 'pserver-0',
      advertiseAddress: 'pserver-0.pserver:8100',
      leaseTtlSeconds: 10,
      etcdSecurity: {
        caFile: 'etcd-ca.pem',
        certFile: 'etcd.pem',
        keyFile: 'etcd-key.pem',
        username: 'pserver',
        passwordFile: 'password',
      },
    });
  });

  it('takes a flag over its variable', () => {
    expect(
      load(['--port', '8101', '--checkpoint-interval-s', '5'], {
        PSERVER_PORT: '9100',
        PSERVER_CHECKPOINT_INTERVAL_S: '30',
      }),
    ).toMatchObject({ port: 8101, checkpointIntervalMs: 5_000 });
  });

  describe('reads the flags it shares with the master as the master does', () => {
    // A standalone pserver's sync and ssp need a roster; the master's take the live trainers.
    const roster = ['--sync-trainers', '4'];

    it.each(sharedFlagVectors('PSERVER'))('$args', ({ args, env, config }) => {
      const pick = (c: PserverConfig) =>
        Object.fromEntries(Object.keys(config).map((f) => [f, c[f as keyof PserverConfig]]));
      expect(pick(load([...roster, ...args]))).toEqual(config);
      expect(pick(load(roster, env))).toEqual(config);
    });
  });
});
