import { abortableSleep } from '@pserver/rpc';

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export const sleepFor: (ms: number, signal?: AbortSignal) => Promise<void> = abortableSleep;

/**
 * Exponential backoff with full jitter: attempt 0 → up to `baseMs`, doubling up to `maxMs`. The
 * cap is 1 s so that a client waiting out a failover notices within about a second that the
 * shard serves again.
 */
export function backoffMs(attempt: number, baseMs = 50, maxMs = 1_000): number {
  return Math.random() * Math.min(maxMs, baseMs * 2 ** attempt);
}
