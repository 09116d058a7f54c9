import type { ManagedProcess } from '@pserver/local-cluster';

/**
 * A process for unit tests: killed by a flag, its latest line of each message written by the
 * test (`log`), as `ManagedProcess.lastLog` keeps them.
 */
export class FakeProcess implements Pick<
  ManagedProcess,
  'name' | 'pid' | 'running' | 'signal' | 'lastLog'
> {
  killedBy: NodeJS.Signals | undefined;
  private readonly logs = new Map<string, Record<string, unknown>>();

  constructor(
    readonly name: string,
    readonly pid: number,
  ) {}

  get running(): boolean {
    return this.killedBy === undefined;
  }

  signal(signal: NodeJS.Signals): void {
    this.killedBy = signal;
  }

  lastLog(msg: string): Record<string, unknown> | undefined {
    return this.logs.get(msg);
  }

  /** Writes a line with this message at `at` (ms since the epoch). */
  log(at: number, msg: string, fields: Record<string, unknown> = {}): void {
    this.logs.set(msg, { msg, time: new Date(at).toISOString(), ...fields });
  }
}
