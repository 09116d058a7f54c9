import type { Etcd3, IKeyValue } from 'etcd3';
import type { Logger } from '@pserver/logging';
import type { LeaseKeeper } from './lease-keeper';
import { nextWatchEvent } from './wait-for-watch';

/** The current leader: its address and the fencing token of its term. */
export interface Leader {
  value: string;
  key: string;
  /** The create revision of the leader's key: every write of the leader compares it. */
  revision: number;
}

/**
 * etcd's election recipe: each candidate puts `<prefix><lease id>` under its own lease; the key
 * with the lowest create revision leads; the others wait for their predecessor's key to go. The
 * leader's create revision is its fencing token: a leader whose lease expired has lost its key,
 * so its guarded writes (`guard()`) fail even if it has not noticed yet.
 */
export class LeaderElection {
  private readonly key: string;
  private revision: number | undefined;

  constructor(
    private readonly client: Etcd3,
    private readonly prefix: string,
    private readonly lease: LeaseKeeper,
    private readonly value: string,
    private readonly logger: Logger,
  ) {
    this.key = `${prefix}${lease.id}`;
  }

  /**
   * Resolves once this candidate leads; rejects when `signal` aborts (at once, even while an
   * etcd call is pending: a candidate whose lease is lost must not wait for a stalled etcd).
   */
  campaign(signal: AbortSignal): Promise<Leader> {
    return untilAborted(this.campaignSteps(signal), signal);
  }

  private async campaignSteps(signal: AbortSignal): Promise<Leader> {
    const created = await this.client
      .if(this.key, 'Create', '==', 0)
      .then(this.client.put(this.key).value(this.value).lease(this.lease.id))
      .else(this.client.get(this.key))
      .commit();
    this.revision = created.succeeded
      ? Number(created.header.revision)
      : Number(created.responses[0]?.response_range?.kvs[0]?.create_revision ?? 0);
    if (!this.revision) throw new Error(`election: could not create ${this.key}`);
    for (;;) {
      signal.throwIfAborted();
      const { kvs, header } = await this.client
        .getAll()
        .prefix(this.prefix)
        .sort('Create', 'Ascend')
        .exec();
      // Nothing is decided after an abort, however late the answer came.
      signal.throwIfAborted();
      const mine = kvs.findIndex((kv) => kv.key.toString() === this.key);
      if (mine < 0) throw new Error(`election: ${this.key} is gone (the lease expired)`);
      if (mine === 0) {
        this.logger.info('elected leader', { key: this.key, revision: this.revision });
        return { value: this.value, key: this.key, revision: this.revision };
      }
      await this.waitForDeletion(
        kvs[mine - 1]!.key.toString(),
        Number(header.revision) + 1,
        signal,
      );
    }
  }

  /** The current leader, read linearizably, or undefined when there is none. */
  async leader(): Promise<Leader | undefined> {
    return leaderOf(this.client, this.prefix);
  }

  /** Gives up leadership (or candidacy): the next candidate leads at once. */
  async resign(): Promise<void> {
    if (this.revision === undefined) return;
    await this.client
      .if(this.key, 'Create', '==', this.revision)
      .then(this.client.delete().key(this.key))
      .commit();
  }

  private async waitForDeletion(
    key: string,
    fromRevision: number,
    signal: AbortSignal,
  ): Promise<void> {
    const watcher = await this.client.watch().key(key).startRevision(String(fromRevision)).create();
    try {
      // The predecessor may be gone already; then the next loop sees it at once.
      if (await this.client.get(key).exists())
        await nextWatchEvent(watcher, ['delete'], 10_000, signal);
    } finally {
      await watcher.cancel().catch(() => undefined);
    }
  }
}

/** `work`'s outcome, or `signal`'s reason as soon as it aborts (`work` then ends unobserved). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => undefined);
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The leader of an election prefix: the key with the lowest create revision. */
export async function leaderOf(client: Etcd3, prefix: string): Promise<Leader | undefined> {
  const { kvs } = await client.getAll().prefix(prefix).sort('Create', 'Ascend').limit(1).exec();
  const kv: IKeyValue | undefined = kvs[0];
  return kv
    ? { value: kv.value.toString(), key: kv.key.toString(), revision: Number(kv.create_revision) }
    : undefined;
}
