import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@pserver/logging';
import { createDeadlineSignal, createLinkedAbortController, RpcError } from '@pserver/rpc';
import type { TrainerRegistration } from './master-link';

/** What keeping a session alive needs of the master. */
export interface SessionMaster {
  keepAlive(trainerId: number, signal?: AbortSignal): Promise<unknown>;
  registerTrainer(
    registration: TrainerRegistration,
    signal?: AbortSignal,
  ): Promise<{ trainerId: number }>;
}

export interface SessionKeeperOptions {
  /** Time between the end of one keep-alive and the start of the next (a third of the TTL). */
  intervalMs: number;
  /** How to register again when the session ended. */
  registration: TrainerRegistration;
  logger: Logger;
  /** The trainer id now, and what to do when the session was registered again under a new one. */
  trainerId(): number;
  onNewTrainerId(trainerId: number): void;
}

/**
 * Keeps a trainer's session alive: one KeepAlive at a time, each bounded by the interval, the
 * next one an interval after the last ended — a slow master never has two in flight from one
 * trainer. When the master answers that the session expired (the trainer was stopped past the
 * TTL, or a new leader did not know it), it registers again under a new id. Every failure is
 * logged and the loop goes on: nothing here rejects unhandled. `close()` ends the loop and waits
 * for it.
 */
export class SessionKeeper {
  private readonly closing = new AbortController();
  private readonly loop: Promise<void>;

  constructor(
    private readonly master: SessionMaster,
    private readonly options: SessionKeeperOptions,
  ) {
    this.loop = this.run();
  }

  async close(): Promise<void> {
    this.closing.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { intervalMs, logger } = this.options;
    const signal = this.closing.signal;
    while (!signal.aborted) {
      // Unreferenced: the keep-alive alone does not keep the process running.
      const slept = await sleep(intervalMs, undefined, { signal, ref: false }).then(
        () => true,
        () => false,
      );
      if (!slept) return;
      try {
        await this.once();
      } catch (err) {
        if (signal.aborted) return;
        logger.warn('keep-alive failed; trying again', {
          trainerId: this.options.trainerId(),
          reason: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }

  private async once(): Promise<void> {
    const deadline = createDeadlineSignal(this.options.intervalMs);
    const linked = createLinkedAbortController(this.closing.signal, deadline.signal);
    try {
      const trainerId = this.options.trainerId();
      try {
        await this.master.keepAlive(trainerId, linked.signal);
      } catch (err) {
        if (!(err instanceof RpcError && err.code === 'MASTER_SESSION_EXPIRED')) throw err;
        // Not bounded by the interval: a registration cut short would leave a session behind.
        const registered = await this.master.registerTrainer(
          this.options.registration,
          this.closing.signal,
        );
        this.options.logger.warn('the session had ended; registered again under a new id', {
          from: trainerId,
          to: registered.trainerId,
        });
        this.options.onNewTrainerId(registered.trainerId);
      }
    } finally {
      linked.cleanup();
      deadline.cleanup();
    }
  }
}
