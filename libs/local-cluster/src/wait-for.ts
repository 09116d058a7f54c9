export interface WaitForOptions {
  /** Generous: the bound only catches a hang, it does not measure anything. */
  timeoutMs: number;
  intervalMs?: number;
  /** Said in the error when the bound is reached. */
  description?: string;
  signal?: AbortSignal;
}

/**
 * Polls `predicate` until it returns a value other than `undefined`/`false` and resolves with it.
 * A predicate that throws is retried (the thing it probes may not be up yet); its last error is
 * reported if the bound is reached.
 */
export async function waitFor<T>(
  predicate: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitForOptions,
): Promise<T> {
  const { timeoutMs, intervalMs = 25, description = 'condition', signal } = options;
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const value = await predicate();
      if (value !== undefined && value !== false) return value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() >= deadline) {
      const cause = lastError instanceof Error ? `: last error: ${lastError.message}` : '';
      throw new Error(`waitFor: ${description} not met within ${timeoutMs} ms${cause}`, {
        cause: lastError,
      });
    }
    await sleep(intervalMs, signal);
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
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
