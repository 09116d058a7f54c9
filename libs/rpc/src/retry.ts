import { abortableSleep } from './abort-signals';
import { backoffDelayMs, type BackoffPolicy } from './backoff';

/**
 * Runs an operation again until it succeeds, waiting between attempts as a named policy says
 * (`backoffPolicies`). Its own, not cockatiel's `retry`: cockatiel waits between attempts on a
 * plain timer that an AbortSignal does not end, and has no overall deadline; here every wait is
 * `abortableSleep`, so whoever stops (a node, a tenure, a client) is not kept waiting.
 */

/**
 * How one attempt ended when it asks for another: an error, or a result that is not ready. Told
 * apart with `'error' in outcome` (an error may be anything, `undefined` too).
 */
export type AttemptOutcome<T> =
  | { readonly error: unknown; readonly result?: never }
  | { readonly result: T; readonly error?: never };

/** Told before each wait: the attempt that just ended (from 1), how, and the wait. */
export type RetryEvent<T> = AttemptOutcome<T> & {
  readonly attempt: number;
  readonly delayMs: number;
};

export interface RetryOptions<T> {
  /** The waits between attempts: one of `backoffPolicies`. */
  policy: BackoffPolicy;
  /**
   * Ends the retries: checked before every attempt and after a failed one, and it ends a wait at
   * once; the retry rejects with its reason. It does not abort an attempt under way: pass it to
   * the operation for that.
   */
  signal?: AbortSignal;
  /**
   * No attempt starts later than this many ms after the first one did; a wait that would end
   * later is cut short at that moment, and the retry rejects with `RetryDeadlineError`.
   */
  timeoutMs?: number;
  /**
   * Whether an attempt's error is worth another attempt (default: every error is). One that is
   * not is thrown as it came. Asked before the signal: an error may be what an abort caused.
   */
  retryIf?: (error: unknown) => boolean;
  /** Whether an attempt's result asks for another attempt (a poll's "not yet"; default: none). */
  again?: (result: T) => boolean;
  /**
   * A wait the outcome of attempt number `attempt` asks for (a server's retry hint), instead of
   * the policy's; undefined: the policy's.
   */
  waitMs?: (outcome: AttemptOutcome<T>, attempt: number) => number | undefined;
  /** Called, and awaited, before each wait: its log line, or work that must come first. */
  onRetry?: (event: RetryEvent<T>) => void | Promise<void>;
  /** Where jitter comes from (tests make it deterministic). */
  random?: () => number;
}

/** The retries ran out of time (`RetryOptions.timeoutMs`); `cause` is the last attempt's error. */
export class RetryDeadlineError extends Error {
  readonly code = 'RETRY_DEADLINE_EXCEEDED';

  constructor(
    /** How many attempts ran. */
    readonly attempts: number,
    readonly timeoutMs: number,
    /** How the last attempt ended. */
    readonly last: AttemptOutcome<unknown>,
  ) {
    super(`no attempt succeeded within ${timeoutMs} ms (${attempts} attempts)`, {
      cause: 'error' in last ? last.error : undefined,
    });
    this.name = 'RetryDeadlineError';
  }
}

/**
 * Runs `operation(attempt)` (attempt from 1) until it resolves with a result `again` does not
 * ask to repeat, and resolves with that result. Between attempts it waits `waitMs`'s hint or the
 * policy's delay for that retry. It rejects with an error `retryIf` refuses, with the signal's
 * reason once it aborts, or with `RetryDeadlineError` once `timeoutMs` has passed.
 */
export async function retry<T>(
  operation: (attempt: number) => Promise<T>,
  options: RetryOptions<T>,
): Promise<T> {
  const { policy, signal, timeoutMs, retryIf = () => true, again, waitMs, onRetry } = options;
  const deadline = timeoutMs === undefined ? Infinity : performance.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    let outcome: AttemptOutcome<T>;
    try {
      const result = await operation(attempt);
      if (!again?.(result)) return result;
      outcome = { result };
    } catch (error) {
      if (!retryIf(error)) throw error;
      outcome = { error };
    }
    signal?.throwIfAborted();
    const leftMs = deadline - performance.now();
    if (leftMs <= 0) throw new RetryDeadlineError(attempt, timeoutMs!, outcome);
    const wantedMs = waitMs?.(outcome, attempt) ?? backoffDelayMs(policy, attempt, options.random);
    // A wait the deadline cuts short ends the retries: no attempt starts at the deadline.
    const lastWait = wantedMs >= leftMs;
    const delayMs = Math.min(wantedMs, leftMs);
    await onRetry?.({ ...outcome, attempt, delayMs });
    if (delayMs > 0) await abortableSleep(delayMs, signal);
    if (lastWait) throw new RetryDeadlineError(attempt, timeoutMs!, outcome);
  }
}
