import type { Etcd3, Watcher } from 'etcd3';
import type { JobKeys } from './keys';

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

/**
 * The values under `prefix` of every index below `count` (keys `<prefix><i>`), once each index
 * has one that `parse` accepts: read, then read again at each put under the prefix (every
 * `rereadMs` at the latest), until then. The watch is made first and `first` runs after it (an
 * own put, say): a put between the watch and a read is seen either way. Rejects when `signal`
 * aborts.
 */
export async function untilEveryIndexPut<T>(
  client: Etcd3,
  keys: JobKeys,
  prefix: string,
  count: number,
  parse: (value: string) => T | undefined,
  options: { rereadMs: number; signal: AbortSignal; first?: () => Promise<void> },
): Promise<Map<number, T>> {
  const watcher = await client.watch().prefix(prefix).create();
  try {
    await options.first?.();
    for (;;) {
      options.signal.throwIfAborted();
      const values = await client.getAll().prefix(prefix).strings();
      const byIndex = new Map<number, T>();
      for (const [key, value] of Object.entries(values)) {
        const index = keys.indexUnder(prefix, key);
        const parsed = index !== undefined && index < count ? parse(value) : undefined;
        if (parsed !== undefined) byIndex.set(index!, parsed);
      }
      if (byIndex.size === count) return byIndex;
      await nextWatchEvent(watcher, ['put'], options.rereadMs, options.signal);
    }
  } finally {
    await watcher.cancel().catch(() => undefined);
  }
}
