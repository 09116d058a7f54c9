import { backoffPolicies, retry, RetryDeadlineError } from '@pserver/rpc';
import { ClientError, isRefused, isStale } from './errors';
import { StepContext, type ContextHost } from './step-context';
import type { StepPushes } from './step-pushes';
import type { View } from './view';

/** What running a step needs of its client. */
export interface StepHost extends ContextHost {
  /** The trainer's id now: it changes when an expired session is registered again. */
  readonly trainerId: number;
  readonly pass: number;
  readonly view: View;
  readonly stepTimeoutMs: number;
  readonly closingSignal: AbortSignal;
  /** Keeps a step's pushes once it went through on every shard (`lastStepPushes`). */
  keepStepPushes(pushes: StepPushes): void;
  nextStepNumber(): number;
  /** Resolves true once every shard is served, false if `deadline` passes first. */
  waitForCompleteView(deadline: number): Promise<boolean>;
  refreshView(): Promise<void>;
  /** Tracks a live context; the returned function stops tracking it. */
  track(ctx: StepContext): () => void;
}

/**
 * Runs one training step (`PserverClient.step`): its identity — trainer id, step number, pass —
 * is captured once, here, and every run of the step carries it. A run that ends with a stale view
 * is followed, after a short jittered backoff and a view refresh, by another run with a fresh
 * context; each run first waits until every shard is served. Only the step's deadline ends the
 * retries (`CLIENT_STEP_FAILED`); errors that waiting cannot change are thrown as they come.
 */
export async function runStep<T>(
  host: StepHost,
  fn: (ctx: StepContext) => Promise<T>,
  { reading = false } = {},
): Promise<T> {
  // Reads and initialization outside training (`reading`) take step 0: they count as no step of
  // the trainer, and no read waits for one under SYNC or SSP.
  const step = reading ? 0 : host.nextStepNumber();
  const identity = { trainerId: host.trainerId, step, pass: host.pass };
  const timeoutMs = host.stepTimeoutMs;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let run = 0;
  const stepFailed = (): ClientError =>
    new ClientError(
      'CLIENT_STEP_FAILED',
      `step ${identity.step}: not done within ${timeoutMs} ms (${run} runs; last: ${
        (lastError as Error | undefined)?.message ?? 'no complete cluster view'
      })`,
      { cause: lastError },
    );
  const runOnce = async (): Promise<T> => {
    run++;
    // A run after a stale one captures a view fetched now, not the one that went stale.
    if (run > 1)
      await host.refreshView().catch((err: unknown) => {
        if (isRefused(err)) throw err;
        lastError = err;
      });
    host.closingSignal.throwIfAborted();
    if (!(await host.waitForCompleteView(deadline))) throw stepFailed();
    const ctx = new StepContext(host, host.view, identity, deadline);
    const untrack = host.track(ctx);
    try {
      const result = await fn(ctx);
      // Rows pushed without a sendGrads go out now, still within this run's context.
      await ctx.flush();
      // Every shard took the step: the one before can no longer be asked for.
      if (step > 0) host.keepStepPushes(ctx.sent);
      return result;
    } catch (err) {
      lastError = err;
      throw err;
    } finally {
      ctx.close();
      untrack();
    }
  };
  try {
    return await retry(runOnce, {
      policy: backoffPolicies.shardFailover,
      signal: host.closingSignal,
      timeoutMs,
      retryIf: (err) => !host.closingSignal.aborted && (isStale(err) || isPastDeadline(err)),
      onRetry: () =>
        host.logger.info('step ran under a stale view; running it again', {
          step: identity.step,
          run,
          reason: (lastError as Error).message,
        }),
    });
  } catch (err) {
    throw err instanceof RetryDeadlineError ? stepFailed() : err;
  }
}

/** The step's deadline passed during a run (the context's own timer aborted it). */
function isPastDeadline(err: unknown): boolean {
  return err instanceof ClientError && err.code === 'CLIENT_DEADLINE_EXCEEDED';
}
