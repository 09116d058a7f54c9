import type { ManagedProcess } from './child-process';
import { spawnNode } from './child-process';
import { appBundle } from './workspace';

export interface PserverProcess {
  readonly process: ManagedProcess;
  readonly address: string;
}

/**
 * Starts the pserver app from its bundle on a free loopback port, with JSON logs, and resolves
 * once it listens. `args` are passed on (e.g. `['--index', '1', '--shards', '2']`).
 */
export async function startPserverProcess(
  args: string[] = [],
  options: { name?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<PserverProcess> {
  const child = spawnNode(appBundle('pserver'), ['--port', '0', '--log-format', 'json', ...args], {
    name: options.name ?? 'pserver',
    env: options.env,
  });
  const listening = await child.waitForLog((entry) => entry.msg === 'listening', {
    timeoutMs: options.timeoutMs ?? 20_000,
  });
  return { process: child, address: String(listening.address) };
}
