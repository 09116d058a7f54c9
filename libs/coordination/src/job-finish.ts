import type { Etcd3 } from 'etcd3';
import { backoffPolicies, retry } from '@pserver/rpc';
import type { JobKeys } from './keys';
import { nextWatchEvent } from './wait-for-watch';

/** How often the key is read again without an event (events alone are not trusted). */
const rereadMs = 10_000;

/**
 * Resolves once the job is finished (`finish/done` exists: `MasterTerm.finishJob`), at once if it
 * already is; rejects when `signal` aborts. Survives etcd outages and broken watches: it reads
 * again until it can (`backoffPolicies.jobFinishedWatch` after a failure).
 */
export async function jobFinished(
  client: Etcd3,
  keys: JobKeys,
  signal: AbortSignal,
): Promise<void> {
  await retry(() => watchUntilFinished(client, keys, signal), {
    policy: backoffPolicies.jobFinishedWatch,
    signal,
  });
}

/** Watches and reads until the key exists; throws when etcd fails either. */
async function watchUntilFinished(
  client: Etcd3,
  keys: JobKeys,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    // Watch first, then read: a put between the two is seen either way.
    const watcher = await client.watch().key(keys.finished).create();
    try {
      if (await client.get(keys.finished).exists()) return;
      await nextWatchEvent(watcher, ['put'], rereadMs, signal);
    } finally {
      await watcher.cancel().catch(() => undefined);
    }
  }
}

/** How many pservers are still registered in the job (a finished job ends when none is). */
export function pserversLeft(client: Etcd3, keys: JobKeys): Promise<number> {
  return client.getAll().prefix(keys.pserversPrefix).count();
}
