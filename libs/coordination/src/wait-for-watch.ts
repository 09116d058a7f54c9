import type { Watcher } from 'etcd3';

/**
 * Resolves on the watcher's first event of the given kinds, on its error (the caller then reads
 * again), after `timeoutMs` (a re-read now and then, since events alone are not trusted), or
 * rejects when `signal` aborts. Listeners and the timer are removed in every case.
 */
export function nextWatchEvent(
  watcher: Watcher,
  events: ('put' | 'delete' | 'data')[],
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      for (const event of events) watcher.off(event as 'data', onEvent);
      watcher.off('error', onEvent);
    };
    const onEvent = (): void => {
      done();
      resolve();
    };
    const onAbort = (): void => {
      done();
      reject(signal.reason);
    };
    const timer = setTimeout(onEvent, timeoutMs);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    // One listener for several event names: their payloads do not matter here.
    for (const event of events) watcher.on(event as 'data', onEvent);
    watcher.on('error', onEvent);
  });
}
