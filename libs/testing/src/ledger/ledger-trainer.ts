import path from 'node:path';
import {
  parseJsonLine,
  spawnProcess,
  waitFor,
  type ExitStatus,
  type ManagedProcess,
  type NetworkLab,
} from '@pserver/local-cluster';

/** How to start a ledger trainer of one language: the same arguments follow in every language. */
export interface TrainerProgram {
  language: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  /**
   * A signal on which the program prints the stack of every thread to stderr and goes on (Python's
   * faulthandler, Go's SIGQUIT): sent before a trainer that does not finish is killed, so that
   * the report says where it was stuck.
   */
  stackSignal?: NodeJS.Signals;
}

/** The shape of the ledger: `trainers` × `capacity` coordinates, one per (ordinal, k). */
export interface LedgerShape {
  trainers: number;
  capacity: number;
  /** Elements of a tensor no step touches, to give the shards a real model's restore time. */
  ballast: number;
  /**
   * Buckets of the row ledger's table (ledger-rows.ts): when set, every step also pushes −1 to its
   * own row, in the same push as its dense gradient. TypeScript trainers only.
   */
  tableBuckets?: number;
}

/** An acknowledged step: step `k` of trainer `ordinal`, with what it began with and when. */
export interface LedgerAck {
  ordinal: number;
  k: number;
  /** The trainer id and client step number the step's first run began with. */
  trainerId?: number;
  step?: number;
  startMs: number;
  ackMs: number;
}

/** A step that threw or raised in the trainer. */
export interface LedgerStepError {
  ordinal: number;
  k: number;
  startMs: number;
  atMs: number;
  error: string;
}

/**
 * One ledger trainer process (libs/client/test/fixtures/ledger-trainer.ts and its Python twin):
 * its acknowledged steps and step errors as they are printed, SIGSTOP/SIGCONT, and `finish()`
 * (SIGUSR2: end after the step under way). Tied to this process through its stdin.
 */
export class LedgerTrainer {
  readonly acks: LedgerAck[] = [];
  readonly errors: LedgerStepError[] = [];
  /** `done`'s count of steps, once printed. */
  doneSteps: number | undefined;
  ready = false;
  readonly process: ManagedProcess;

  constructor(
    private readonly program: TrainerProgram,
    masters: string[],
    readonly ordinal: number,
    shape: LedgerShape,
    paceMs: number,
    logDir?: string,
    /** Run it on host `trainer-<ordinal>` of this lab, not on the machine. */
    network?: NetworkLab,
  ) {
    const onHost = (command: string, args: string[]): [string, string[]] =>
      network
        ? network.command(network.host(`trainer-${ordinal}`), command, args)
        : [command, args];
    this.process = spawnProcess(
      ...onHost(program.command, [
        ...program.args,
        masters.join(','),
        String(ordinal),
        String(shape.trainers),
        String(shape.capacity),
        String(paceMs),
        String(shape.ballast),
        ...(shape.tableBuckets ? [String(shape.tableBuckets)] : []),
      ]),
      {
        name: `ledger-${program.language}-${ordinal}`,
        env: program.env,
        stdinPipe: true,
        ...(logDir ? { logDir: path.resolve(logDir) } : {}),
        onLine: (line) => this.observe(line),
      },
    );
  }

  /** Acknowledged steps at or after `sinceMs`. */
  acksSince(sinceMs: number): number {
    let n = 0;
    for (let i = this.acks.length - 1; i >= 0 && this.acks[i]!.ackMs >= sinceMs; i--) n++;
    return n;
  }

  pause(): void {
    this.process.signal('SIGSTOP');
  }

  resume(): void {
    this.process.signal('SIGCONT');
  }

  /**
   * Asks it to stop after its step under way and waits for it to exit; one still running after
   * `timeoutMs` has its stacks printed (`stackSignal`) and is killed.
   */
  async finish(timeoutMs: number): Promise<ExitStatus> {
    this.process.signal('SIGCONT');
    this.process.signal('SIGUSR2');
    const { stackSignal } = this.program;
    const timer = setTimeout(() => {
      if (!stackSignal) return this.process.killNow();
      this.process.signal(stackSignal);
      setTimeout(() => this.process.killNow(), 2_000);
    }, timeoutMs);
    try {
      return await this.process.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Its last lines of output that are not acknowledged steps (stderr included): what it said last. */
  lastWords(count: number): string[] {
    return this.process.lines.filter((line) => parseJsonLine(line)?.event !== 'step').slice(-count);
  }

  private observe(line: string): void {
    const entry = parseJsonLine(line);
    if (!entry) return;
    switch (entry.event) {
      case 'ready':
        this.ready = true;
        break;
      case 'step':
        this.acks.push({
          ordinal: Number(entry.ordinal),
          k: Number(entry.k),
          ...(entry.trainerId !== undefined ? { trainerId: Number(entry.trainerId) } : {}),
          ...(entry.step !== undefined ? { step: Number(entry.step) } : {}),
          startMs: Number(entry.startMs),
          ackMs: Number(entry.ackMs),
        });
        break;
      case 'step-error':
        this.errors.push({
          ordinal: Number(entry.ordinal),
          k: Number(entry.k),
          startMs: Number(entry.startMs),
          atMs: Number(entry.atMs),
          error: String(entry.error),
        });
        break;
      case 'done':
        this.doneSteps = Number(entry.steps);
        break;
    }
  }
}

/**
 * Waits until every trainer still running has `count` acknowledged steps at or after `sinceMs`;
 * resolves with whether they all did within `timeoutMs` (a run goes on to report what it saw).
 */
export async function waitForSteps(
  trainers: LedgerTrainer[],
  sinceMs: number,
  count: number,
  timeoutMs: number,
): Promise<boolean> {
  try {
    await waitFor(
      () => trainers.every((t) => !t.process.running || t.acksSince(sinceMs) >= count) || undefined,
      { timeoutMs, intervalMs: 50, description: `every trainer stepping ${count} times` },
    );
    return true;
  } catch {
    return false;
  }
}
