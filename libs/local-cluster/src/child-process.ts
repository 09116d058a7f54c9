import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { workspaceRoot } from './workspace';

export interface SpawnOptions {
  /** Short name used in log file names and error messages, e.g. `pserver-0`. */
  name: string;
  /** Added to the parent's environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /**
   * Keep a pipe to the child's standard input open for as long as this process lives: a child
   * started with `--exit-on-stdin-close` then exits when this process dies, even by SIGKILL.
   */
  stdinPipe?: boolean;
  /** Where the output is copied (default `tmp/test-logs/` in the repository). */
  logDir?: string;
  /** Called with every line of output (e.g. to print it with a prefix). */
  onLine?: (line: string) => void;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Every process started here and not yet reaped, so that none outlives the test run. */
const live = new Set<ManagedProcess>();

process.once('exit', () => {
  for (const child of live) child.killNow();
});

const defaultLogDir = (): string => path.join(workspaceRoot(), 'tmp', 'test-logs');

/**
 * A child process owned by this one (a test, the demo): its output is kept line by line (and copied to
 * a log file for post-mortems), it can be signalled, and it is always reaped.
 */
export class ManagedProcess {
  readonly pid: number;
  readonly lines: string[] = [];
  readonly logFile: string;
  readonly exited: Promise<ExitStatus>;
  private status: ExitStatus | undefined;
  private readonly lineListeners = new Set<(line: string) => void>();
  /** The latest structured line of each message, kept as lines arrive (see `lastLog`). */
  private readonly latestByMsg = new Map<string, Record<string, unknown>>();

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    logDir: string,
    echo?: (line: string) => void,
  ) {
    if (child.pid === undefined) throw new Error(`${name}: the process did not start`);
    this.pid = child.pid;
    fs.mkdirSync(logDir, { recursive: true });
    this.logFile = path.join(logDir, `${name}-${this.pid}.log`);
    const log = fs.createWriteStream(this.logFile);
    const onLine = (line: string): void => {
      this.lines.push(line);
      const entry = parseJsonLine(line);
      if (typeof entry?.msg === 'string') this.latestByMsg.set(entry.msg, entry);
      log.write(line + '\n');
      echo?.(line);
      for (const listener of this.lineListeners) listener(line);
    };
    const streamsClosed = [child.stdout, child.stderr].map((stream) => {
      if (!stream) return Promise.resolve();
      const reader = readline.createInterface({ input: stream, crlfDelay: Infinity });
      reader.on('line', onLine);
      return new Promise<void>((resolve) => reader.once('close', resolve));
    });
    live.add(this);
    this.exited = new Promise<ExitStatus>((resolve) => {
      child.once('exit', (code, signal) => {
        this.status = { code, signal };
        live.delete(this);
        // Resolve once the output is read to its end, so callers see the last lines.
        void Promise.all(streamsClosed).then(() => {
          log.end();
          resolve({ code, signal });
        });
      });
    });
  }

  /** The exit status once the process has exited. */
  get exitStatus(): ExitStatus | undefined {
    return this.status;
  }

  get running(): boolean {
    return this.status === undefined;
  }

  /** Lines written so far that parse as JSON objects (structured log lines). */
  jsonLines(): Record<string, unknown>[] {
    return this.lines.flatMap((line) => {
      const entry = parseJsonLine(line);
      return entry ? [entry] : [];
    });
  }

  /** The latest structured log line with this message, if any (no parsing: kept on arrival). */
  lastLog(msg: string): Record<string, unknown> | undefined {
    return this.latestByMsg.get(msg);
  }

  /** Resolves with the first line (already written or still to come) that matches. */
  waitForLine(match: (line: string) => boolean, options: { timeoutMs: number }): Promise<string> {
    const seen = this.lines.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const finish = (fn: () => void): void => {
        clearTimeout(timer);
        this.lineListeners.delete(listener);
        fn();
      };
      const listener = (line: string): void => {
        if (match(line)) finish(() => resolve(line));
      };
      const timer = setTimeout(
        () => finish(() => reject(this.failure(`no matching line within ${options.timeoutMs} ms`))),
        options.timeoutMs,
      );
      this.lineListeners.add(listener);
      void this.exited.then((status) => {
        if (this.lineListeners.has(listener)) {
          finish(() => reject(this.failure(`exited (${describe(status)}) before a matching line`)));
        }
      });
    });
  }

  /** Resolves with the first structured log line whose fields match. */
  async waitForLog(
    match: (entry: Record<string, unknown>) => boolean,
    options: { timeoutMs: number },
  ): Promise<Record<string, unknown>> {
    const matches = (line: string): boolean => {
      const entry = parseJsonLine(line);
      return entry !== undefined && match(entry);
    };
    return parseJsonLine(await this.waitForLine(matches, options)) ?? {};
  }

  /**
   * Waits until the process is stopped (SIGSTOP: state T in /proc/<pid>/stat). A process that
   * stops itself after printing a line may not have stopped yet when the line arrives; a SIGCONT
   * sent then is lost, and it stays stopped.
   */
  async waitUntilStopped(options: { timeoutMs: number }): Promise<void> {
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      const stat = fs.readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      // The state follows the command name, which is in parentheses and may hold anything.
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')) return;
      if (!this.running) throw this.failure('exited while it was expected to stop');
      if (Date.now() > deadline) throw this.failure(`not stopped within ${options.timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Sends a signal (SIGKILL, SIGSTOP, SIGCONT, SIGTERM, …) if the process is still running. */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /**
   * Stops the process and reaps it: `signal` (SIGTERM by default) after a SIGCONT in case it is
   * stopped, then SIGKILL if it has not exited within `graceMs`.
   */
  async stop(options: { signal?: NodeJS.Signals; graceMs?: number } = {}): Promise<ExitStatus> {
    const { signal = 'SIGTERM', graceMs = 10_000 } = options;
    if (!this.running) return this.exited;
    this.child.kill('SIGCONT');
    this.child.kill(signal);
    const timer = setTimeout(() => this.killNow(), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL and reap. */
  async kill(): Promise<ExitStatus> {
    this.killNow();
    return this.exited;
  }

  /** SIGKILL without waiting: for exit handlers, where nothing asynchronous runs. */
  killNow(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  /** An error that names the process and shows the end of its output. */
  failure(what: string): Error {
    const tail = this.lines.slice(-20).join('\n  ');
    return new Error(
      `${this.name} (pid ${this.pid}): ${what}; log ${this.logFile}; last lines:\n  ${tail}`,
    );
  }
}

/** Starts `command` with stdin closed and stdout/stderr captured. */
export function spawnProcess(
  command: string,
  args: string[],
  options: SpawnOptions,
): ManagedProcess {
  const child = spawn(command, args, {
    cwd: options.cwd ?? workspaceRoot(),
    env: { ...process.env, ...options.env },
    stdio: [options.stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) {
    // spawn reports a missing binary asynchronously; say so now, by name.
    child.on('error', () => undefined);
    throw new Error(`${options.name}: could not start ${command}`);
  }
  return new ManagedProcess(options.name, child, options.logDir ?? defaultLogDir(), options.onLine);
}

/** Starts a Node.js script (an app bundle, a fixture) with the same Node.js as the tests. */
export function spawnNode(script: string, args: string[], options: SpawnOptions): ManagedProcess {
  return spawnProcess(process.execPath, [script, ...args], options);
}

/** SIGKILLs and reaps every process still running: an `afterAll` safety net. */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...live].map((child) => child.kill()));
}

function describe(status: ExitStatus): string {
  return status.signal ? `signal ${status.signal}` : `code ${status.code}`;
}

/** A process's log line as JSON (pino writes one object per line); undefined for any other line. */
export function parseJsonLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
