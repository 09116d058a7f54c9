import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { spawnProcess, type ManagedProcess } from './child-process';
import { freePort } from './free-port';
import { waitFor } from './wait-for';

export interface EtcdServerOptions {
  /** How long to wait for the server to answer its health check. */
  startTimeoutMs: number;
  /** Where its output is copied (default `tmp/test-logs/`). */
  logDir?: string;
}

export const defaultEtcdServerOptions: EtcdServerOptions = { startTimeoutMs: 20_000 };

/** A real etcd, started by a test suite on loopback ports with a throw-away data dir. */
export interface EtcdServer {
  /** Client URL, e.g. `http://127.0.0.1:41234`. */
  readonly endpoint: string;
  readonly process: ManagedProcess;
  /** Its data directory (removed by `stop()`). */
  readonly dataDir: string;
  /** A key prefix no other test uses: `/pserver-test/<name>-<random>/`. */
  uniquePrefix(name: string): string;
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
function tiedToParent(binary: string): [command: string, ...args: string[]] {
  try {
    execFileSync('setpriv', ['--pdeathsig', 'KILL', 'true'], { stdio: 'ignore' });
    return ['setpriv', '--pdeathsig', 'KILL', binary];
  } catch {
    return [binary];
  }
}

/**
 * Starts a single-member etcd on free loopback ports. The data dir lives on /dev/shm when the
 * machine has it (fsync there is nearly free, which keeps lease and Txn latencies low in tests).
 */
export async function startEtcd(options: Partial<EtcdServerOptions> = {}): Promise<EtcdServer> {
  const { startTimeoutMs, logDir } = { ...defaultEtcdServerOptions, ...options };
  const binary = etcdBinary();
  // Free ports can be taken between the probe and etcd's bind: try a few times.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(binary, startTimeoutMs, logDir);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

async function startOnce(
  binary: string,
  startTimeoutMs: number,
  logDir: string | undefined,
): Promise<EtcdServer> {
  const tmpRoot = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const dataDir = fs.mkdtempSync(path.join(tmpRoot, 'pserver-etcd-'));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const [command, ...prefix] = tiedToParent(binary);
  const child = spawnProcess(
    command,
    [
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
    ],
    { name: `etcd-${clientPort}`, logDir },
  );
  const removeDataDir = (): void => fs.rmSync(dataDir, { recursive: true, force: true });
  try {
    await waitFor(
      async () => {
        if (!child.running) throw child.failure('etcd exited during start');
        const response = await fetch(`${endpoint}/health`);
        return response.ok && ((await response.json()) as { health?: string }).health === 'true';
      },
      { timeoutMs: startTimeoutMs, intervalMs: 50, description: `etcd at ${endpoint} healthy` },
    );
  } catch (err) {
    await child.kill();
    removeDataDir();
    throw err;
  }
  return {
    endpoint,
    process: child,
    dataDir,
    uniquePrefix: (name) => `/pserver-test/${name}-${randomUUID().slice(0, 8)}/`,
    stop: async () => {
      await child.stop({ graceMs: 5_000 });
      removeDataDir();
    },
  };
}
