import type { ManagedProcess } from './child-process';
import { spawnNode } from './child-process';
import { tempDir } from './temp-dir';
import { appBundle } from './workspace';

export interface AppProcess {
  readonly process: ManagedProcess;
  /** The address it listens on. */
  readonly address: string;
}

export interface PserverProcess extends AppProcess {
  /** Its checkpoint directory. */
  readonly checkpointDir: string;
}

export interface StartAppOptions {
  name?: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  /** Exit with this process (see SpawnOptions.stdinPipe); default true. */
  tiedToParent?: boolean;
  logDir?: string;
  onLine?: (line: string) => void;
}

export interface StartPserverOptions extends StartAppOptions {
  /** Default: a new temporary directory. */
  checkpointDir?: string;
}

/**
 * Starts the pserver app from its bundle on a free loopback port, with JSON logs and a checkpoint
 * directory (a new one unless given), and resolves once it listens. `args` are passed on (e.g.
 * `['--index', '1', '--shards', '2']`, or `['--etcd-endpoints', …]` for cluster mode).
 */
export async function startPserverProcess(
  args: string[] = [],
  options: StartPserverOptions = {},
): Promise<PserverProcess> {
  const checkpointDir = options.checkpointDir ?? tempDir('checkpoints');
  const app = await startApp('pserver', ['--checkpoint-dir', checkpointDir, ...args], {
    name: 'pserver',
    ...options,
  });
  return { ...app, checkpointDir };
}

/**
 * The Prometheus text page of a process started with `--metrics-port` (its address from its
 * `metrics listening` log line).
 */
export async function metricsPage(app: AppProcess): Promise<string> {
  const line = await app.process.waitForLog((e) => e.msg === 'metrics listening', {
    timeoutMs: 10_000,
  });
  const response = await fetch(`http://${String(line.address)}/metrics`);
  if (response.status !== 200)
    throw new Error(`GET /metrics of ${app.address}: HTTP ${response.status}`);
  return response.text();
}

/** Starts a master replica from its bundle; `args` must name the etcd endpoints. */
export function startMasterProcess(
  args: string[],
  options: StartAppOptions = {},
): Promise<AppProcess> {
  return startApp('master', args, { name: 'master', ...options });
}

async function startApp(
  app: string,
  args: string[],
  options: StartAppOptions & { name: string },
): Promise<AppProcess> {
  const tied = options.tiedToParent ?? true;
  const child = spawnNode(
    appBundle(app),
    ['--port', '0', '--log-format', 'json', ...(tied ? ['--exit-on-stdin-close'] : []), ...args],
    {
      name: options.name,
      env: options.env,
      stdinPipe: tied,
      logDir: options.logDir,
      onLine: options.onLine,
    },
  );
  const listening = await child.waitForLog((entry) => entry.msg === 'listening', {
    timeoutMs: options.timeoutMs ?? 20_000,
  });
  return { process: child, address: String(listening.address) };
}
