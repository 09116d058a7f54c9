import type { Etcd3 } from 'etcd3';
import type { JobKeys } from './keys';
import { nextWatchEvent } from './wait-for-watch';

/** How often the key is read again without an event (events alone are not trusted). */
const rereadMs = 10_000;
/** How long to wait before trying again while etcd is unreachable. */
const retryMs = 1_000;

/**
 * Resolves once the job is finished (`finish/done` exists: `MasterTerm.finishJob`), at once if it
 * already is; rejects when `signal` aborts. Survives etcd outages and broken watches: it reads
 * again until it can.
 */
export async function jobFinished(
  client: Etcd3,
  keys: JobKeys,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      // Watch first, then read: a put between the two is seen either way.
      const watcher = await client.watch().key(keys.finished).create();
      try {
        if (await client.get(keys.finished).exists()) return;
        await nextWatchEvent(watcher, ['put'], rereadMs, signal);
      } finally {
        await watcher.cancel().catch(() => undefined);
      }
    } catch {
      if (signal.aborted) break;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
  throw signal.reason;
}

/** How many pservers are still registered in the job (a finished job ends when none is). */
export function pserversLeft(client: Etcd3, keys: JobKeys): Promise<number> {
  return client.getAll().prefix(keys.pserversPrefix).count();
}
