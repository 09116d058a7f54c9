/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Exponential backoff with full jitter: attempt 0 → up to `baseMs`, doubling up to `maxMs`. The
 * cap is 1 s so that a client waiting out a failover notices within about a second that the
 * shard serves again.
 */
export function backoffMs(attempt: number, baseMs = 50, maxMs = 1_000): number {
  return Math.random() * Math.min(maxMs, baseMs * 2 ** attempt);
}
