import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { EtcdSecuritySettings } from '@pserver/config';
import type { KeyPair } from './certificates';
import { spawnProcess, type ManagedProcess } from './child-process';
import { freePort } from './free-port';
import type { LabHost, NetworkLab } from './network-lab';
import { waitFor } from './wait-for';

/** An etcd that serves its clients TLS and requires client certificates (`--client-cert-auth`). */
export interface EtcdTlsOptions {
  /** The CA of the server certificate and of every client certificate etcd accepts. */
  ca: string;
  /** etcd's own certificate (valid for 127.0.0.1) and key. */
  server: KeyPair;
  /**
   * The certificate the harness (health checks, `etcdctl`) and `clientArgs` present; default
   * `server` (the script's server certificates carry clientAuth too). With authentication on,
   * a certificate whose CN names a user is that user when no password is given.
   */
  client?: KeyPair;
}

export interface EtcdServerOptions {
  /** How long to wait for the server to answer its health check. */
  startTimeoutMs: number;
  /** Where its output is copied (default `tmp/test-logs/`). */
  logDir?: string;
  /** Serve clients TLS with client certificates; peer traffic stays plaintext on loopback. */
  tls?: EtcdTlsOptions;
  /** etcd's `--auth-token-ttl`: an unused simple auth token expires after it (etcd: 300 s). */
  authTokenTtlSeconds?: number;
  /** Run it on this host of a network lab (ports 2379 and 2380 of its address), not on loopback. */
  onHost?: { lab: NetworkLab; host: LabHost };
}

export const defaultEtcdServerOptions: EtcdServerOptions = { startTimeoutMs: 20_000 };

/** A real etcd, started by a test suite on loopback ports with a throw-away data dir. */
export interface EtcdServer {
  /** Client URL, e.g. `http://127.0.0.1:41234` (`https://` with TLS). */
  readonly endpoint: string;
  /** The TLS it serves, if any, with the client certificate the harness uses. */
  readonly tls: Required<EtcdTlsOptions> | undefined;
  /** How a client reaches it: the CA and the client certificate with TLS (no user). */
  readonly security: EtcdSecuritySettings;
  /** The flags that point a pserver or master at it: `--etcd-endpoints`, and with TLS `--etcd-ca …`. */
  readonly clientArgs: string[];
  /** The etcd process (a new one after `restart()`). */
  readonly process: ManagedProcess;
  /** Its data directory (removed by `stop()`). */
  readonly dataDir: string;
  /** A key prefix no other test uses: `/pserver-test/<name>-<random>/`. */
  uniquePrefix(name: string): string;
  /**
   * Stops etcd (SIGTERM) and starts it again on the same ports and data: the keys and leases
   * survive (leases get their TTL again), connections and simple auth tokens do not.
   */
  restart(): Promise<void>;
  /** Stops etcd (SIGTERM, then SIGKILL) and deletes its data dir. */
  stop(): Promise<void>;
}

export const etcdInstallHint =
  "etcd is not on PATH. Install it with 'sudo apt-get install etcd-server' (Debian/Ubuntu), " +
  "or run 'npm test', which installs it when run as root.";

/** The `etcd` binary on PATH, or an error that says how to install it. Tests never skip. */
export function etcdBinary(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(etcdInstallHint);
  }
}

/**
 * etcd cannot watch a pipe from its parent as the apps do (`--exit-on-stdin-close`): where
 * util-linux's `setpriv` is (every Debian), it starts etcd with a parent-death signal, so etcd is
 * killed when the process that started it dies, however it died. `setpriv` execs etcd: the pid is
 * etcd's own.
 */
export function tiedToParent(binary: string): [command: string, ...args: string[]] {
  try {
    execFileSync('setpriv', ['--pdeathsig', 'KILL', 'true'], { stdio: 'ignore' });
    return ['setpriv', '--pdeathsig', 'KILL', binary];
  } catch {
    return [binary];
  }
}

/** `command args…` as run on the lab host, if any. */
function wrapped(
  onHost: EtcdServerOptions['onHost'],
  command: string,
  args: string[],
): [string, string[]] {
  return onHost ? onHost.lab.command(onHost.host, command, args) : [command, args];
}

/**
 * Starts a single-member etcd on free loopback ports. The data dir lives on /dev/shm when the
 * machine has it (fsync there is nearly free, which keeps lease and Txn latencies low in tests).
 */
export async function startEtcd(options: Partial<EtcdServerOptions> = {}): Promise<EtcdServer> {
  const settings = { ...defaultEtcdServerOptions, ...options };
  const binary = etcdBinary();
  // Free ports can be taken between the probe and etcd's bind: try a few times.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(binary, settings);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

async function startOnce(binary: string, options: EtcdServerOptions): Promise<EtcdServer> {
  const { startTimeoutMs, logDir, authTokenTtlSeconds } = options;
  const tls = options.tls && { client: options.tls.server, ...options.tls };
  const tmpRoot = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const dataDir = fs.mkdtempSync(path.join(tmpRoot, 'pserver-etcd-'));
  const { onHost } = options;
  // A lab host is a namespace of its own: etcd's usual ports are free there.
  const [clientPort, peerPort] = onHost ? [2379, 2380] : [await freePort(), await freePort()];
  const address = onHost?.host.address ?? '127.0.0.1';
  const endpoint = `${tls ? 'https' : 'http'}://${address}:${clientPort}`;
  const peer = `http://${address}:${peerPort}`;
  const [tied, ...prefix] = tiedToParent(binary);
  const [command, args] = wrapped(onHost, tied, [
    ...prefix,
    `--name=test`,
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${endpoint}`,
    `--advertise-client-urls=${endpoint}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=test=${peer}`,
    '--logger=zap',
    '--log-level=warn',
    // One member: a short election timeout only makes it lead sooner after start.
    '--heartbeat-interval=10',
    '--election-timeout=100',
    ...(tls
      ? [
          `--cert-file=${tls.server.cert}`,
          `--key-file=${tls.server.key}`,
          `--trusted-ca-file=${tls.ca}`,
          '--client-cert-auth',
        ]
      : []),
    ...(authTokenTtlSeconds !== undefined ? [`--auth-token-ttl=${authTokenTtlSeconds}`] : []),
  ]);
  /** Starts etcd on the data dir and waits until it is healthy. */
  const launch = async (): Promise<ManagedProcess> => {
    const started = spawnProcess(command, args, { name: `etcd-${clientPort}`, logDir });
    try {
      await waitFor(
        async () => {
          if (!started.running) throw started.failure('etcd exited during start');
          return (await health(endpoint, tls)) === 'true';
        },
        { timeoutMs: startTimeoutMs, intervalMs: 50, description: `etcd at ${endpoint} healthy` },
      );
      return started;
    } catch (err) {
      await started.kill();
      throw err;
    }
  };
  const removeDataDir = (): void => fs.rmSync(dataDir, { recursive: true, force: true });
  let child: ManagedProcess;
  try {
    child = await launch();
  } catch (err) {
    removeDataDir();
    throw err;
  }
  const security: EtcdSecuritySettings = {
    caFile: tls?.ca,
    certFile: tls?.client.cert,
    keyFile: tls?.client.key,
    username: undefined,
    passwordFile: undefined,
  };
  return {
    endpoint,
    tls,
    security,
    clientArgs: [
      '--etcd-endpoints',
      endpoint,
      ...(tls
        ? ['--etcd-ca', tls.ca, '--etcd-cert', tls.client.cert, '--etcd-key', tls.client.key]
        : []),
    ],
    get process() {
      return child;
    },
    dataDir,
    uniquePrefix: (name) => `/pserver-test/${name}-${randomUUID().slice(0, 8)}/`,
    restart: async () => {
      await child.stop({ graceMs: 5_000 });
      child = await launch();
    },
    stop: async () => {
      await child.stop({ graceMs: 5_000 });
      removeDataDir();
    },
  };
}

/** The `health` field of etcd's `GET /health`, over TLS with the client certificate if given. */
export function health(
  endpoint: string,
  tls: Required<EtcdTlsOptions> | undefined,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const tlsOptions = tls && {
      ca: fs.readFileSync(tls.ca),
      cert: fs.readFileSync(tls.client.cert),
      key: fs.readFileSync(tls.client.key),
    };
    const get = tls ? https.get : http.get;
    const request = get(`${endpoint}/health`, { ...tlsOptions, timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        try {
          resolve(String((JSON.parse(body) as { health?: unknown }).health));
        } catch (err) {
          reject(err as Error);
        }
      });
      res.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error('health check timed out')));
    request.on('error', reject);
  });
}
