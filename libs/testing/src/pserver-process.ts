import type { ManagedProcess } from './child-process';
import { spawnNode } from './child-process';
import { tempDir } from './temp-dir';
import { appBundle } from './workspace';

export interface PserverProcess {
  readonly process: ManagedProcess;
  readonly address: string;
  /** Its checkpoint directory. */
  readonly checkpointDir: string;
}

export interface StartPserverOptions {
  name?: string;
  /** Default: a new temporary directory. */
  checkpointDir?: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
}

/**
 * Starts the pserver app from its bundle on a free loopback port, with JSON logs and a checkpoint
 * directory of its own (unless one is given), and resolves once it listens. `args` are passed on
 * (e.g. `['--index', '1', '--shards', '2']`).
 */
export async function startPserverProcess(
  args: string[] = [],
  options: StartPserverOptions = {},
): Promise<PserverProcess> {
  const checkpointDir = options.checkpointDir ?? tempDir('checkpoints');
  const child = spawnNode(
    appBundle('pserver'),
    ['--port', '0', '--log-format', 'json', '--checkpoint-dir', checkpointDir, ...args],
    {
      name: options.name ?? 'pserver',
      env: options.env,
    },
  );
  const listening = await child.waitForLog((entry) => entry.msg === 'listening', {
    timeoutMs: options.timeoutMs ?? 20_000,
  });
  return { process: child, address: String(listening.address), checkpointDir };
}
