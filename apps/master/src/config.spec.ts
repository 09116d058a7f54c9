import os from 'node:os';
import { defaultLogFormat } from '@pserver/logging';
import { sharedFlagVectors } from '@pserver/testing';
import { loadConfig, type MasterConfig } from './config';

/** `loadConfig` on these arguments with these variables, and no other `MASTER_*` one. */
function load(args: string[], env: Record<string, string> = {}): MasterConfig {
  const saved = process.env;
  process.env = Object.fromEntries(
    Object.entries(saved).filter(([name]) => !name.startsWith('MASTER_')),
  );
  Object.assign(process.env, env);
  try {
    return loadConfig(['node', 'master', ...args]);
  } finally {
    process.env = saved;
  }
}

describe('the master config', () => {
  it('gives every default', () => {
    expect(load([])).toEqual({
      host: '127.0.0.1',
      port: 8200,
      metricsPort: undefined,
      advertiseAddress: undefined,
      etcdEndpoints: ['http://127.0.0.1:2379'],
      job: 'default',
      desiredPservers: undefined,
      blockSize: 1_048_576,
      replicas: 0,
      consistency: { mode: 'async' },
      leaseTtlSeconds: 5,
      sessionTtlSeconds: 10,
      relistIntervalMs: 5_000,
      shutdownGraceMs: 5_000,
      exitOnStdinClose: false,
      name: `${os.hostname()}-${process.pid}`,
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

  it('reads every MASTER_* variable', () => {
    const env = {
      MASTER_HOST: '0.0.0.0',
      MASTER_PORT: '9200',
      MASTER_METRICS_PORT: '9401',
      MASTER_ADVERTISE_ADDRESS: 'master-0.master:8200',
      MASTER_ETCD_ENDPOINTS: 'https://etcd-0:2379,https://etcd-1:2379',
      MASTER_JOB: 'mnist',
      MASTER_DESIRED_PSERVERS: '4',
      MASTER_BLOCK_SIZE: '4096',
      MASTER_REPLICAS: '1',
      MASTER_CONSISTENCY: 'sync',
      MASTER_REPLICAS_TO_AGGREGATE: '3',
      MASTER_SYNC_FAILOVER: 'continue',
      MASTER_LEASE_TTL_S: '10',
      MASTER_SESSION_TTL_S: '30',
      MASTER_RELIST_INTERVAL_MS: '1000',
      MASTER_SHUTDOWN_GRACE_MS: '600000',
      MASTER_EXIT_ON_STDIN_CLOSE: '1',
      MASTER_TLS_CERT: 'server.pem',
      MASTER_TLS_KEY: 'server-key.pem',
      MASTER_TLS_CLIENT_CA: 'ca.pem',
      MASTER_AUTH_CONFIG: 'auth.json',
      MASTER_ETCD_CA: 'etcd-ca.pem',
      MASTER_ETCD_CERT: 'etcd.pem',
      MASTER_ETCD_KEY: 'etcd-key.pem',
      MASTER_ETCD_USER: 'master',
      MASTER_ETCD_PASSWORD_FILE: 'password',
      MASTER_LOG_LEVEL: 'debug',
      MASTER_LOG_FORMAT: 'pretty',
    };
    expect(load([], env)).toEqual({
      host: '0.0.0.0',
      port: 9200,
      metricsPort: 9401,
      advertiseAddress: 'master-0.master:8200',
      etcdEndpoints: ['https://etcd-0:2379', 'https://etcd-1:2379'],
      job: 'mnist',
      desiredPservers: 4,
      blockSize: 4096,
      replicas: 1,
      consistency: { mode: 'sync', replicasToAggregate: 3, failover: 'continue' },
      leaseTtlSeconds: 10,
      sessionTtlSeconds: 30,
      relistIntervalMs: 1000,
      shutdownGraceMs: 600_000,
      exitOnStdinClose: true,
      name: `${os.hostname()}-${process.pid}`,
      security: {
        tls: { certFile: 'server.pem', keyFile: 'server-key.pem', clientCaFile: 'ca.pem' },
        authConfigFile: 'auth.json',
      },
      etcdSecurity: {
        caFile: 'etcd-ca.pem',
        certFile: 'etcd.pem',
        keyFile: 'etcd-key.pem',
        username: 'master',
        passwordFile: 'password',
      },
      logLevel: 'debug',
      logFormat: 'pretty',
    });
  });

  it('takes a flag over its variable', () => {
    expect(
      load(['--port', '8201', '--relist-interval-ms', '100'], {
        MASTER_PORT: '9200',
        MASTER_RELIST_INTERVAL_MS: '1000',
      }),
    ).toMatchObject({ port: 8201, relistIntervalMs: 100 });
  });

  describe('reads the flags it shares with the pserver as the pserver does', () => {
    it.each(sharedFlagVectors('MASTER'))('$args', ({ args, env, config }) => {
      const pick = (c: MasterConfig) =>
        Object.fromEntries(Object.keys(config).map((f) => [f, c[f as keyof MasterConfig]]));
      expect(pick(load(args))).toEqual(config);
      expect(pick(load([], env))).toEqual(config);
    });
  });
});
