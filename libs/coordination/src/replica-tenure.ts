import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import { backoffPolicies, retry } from '@pserver/rpc';
import type { ReplicaAssignment, ReplicaValue } from './job-state';
import type { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import type { CompleteAssignment } from './membership';

/**
 * A pserver's tenure as a replica of one shard: `replica/<i>/<member>` under its lease, for the
 * primary of one epoch. It ends when the key is deleted or replaced (the master dropped the
 * replica, or promoted it: the promotion deletes every replica key of the shard in the same
 * transaction that assigns it) or when the lease can no longer be trusted.
 */
export class ReplicaTenure {
  readonly index: number;
  readonly shardCount: number;
  readonly blockSize: number;
  /** The epoch of the primary this copy follows. */
  readonly primaryEpoch: number;
  readonly primaryAddress: string;
  private lostReason: string | undefined;
  private readonly listeners = new Set<(reason: string) => void>();
  private stopWatching: (() => Promise<void>) | undefined;
  /** Aborted by `close` (and so when the tenure ends): `markInSync` stops trying. */
  private readonly closed = new AbortController();

  private constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly lease: LeaseKeeper,
    readonly replica: ReplicaAssignment,
    primary: CompleteAssignment,
    private readonly logger: Logger,
  ) {
    this.index = replica.index;
    this.shardCount = primary.shardCount;
    this.blockSize = primary.blockSize;
    this.primaryEpoch = replica.primaryEpoch;
    this.primaryAddress = primary.address;
  }

  /** Takes up a replica role of this member and watches its key. */
  static async open(
    client: Etcd3,
    keys: JobKeys,
    lease: LeaseKeeper,
    replica: ReplicaAssignment,
    primary: CompleteAssignment,
    logger: Logger,
  ): Promise<ReplicaTenure> {
    const tenure = new ReplicaTenure(client, keys, lease, replica, primary, logger);
    lease.onExpired((reason) => tenure.lose(`its lease can no longer be trusted (${reason})`));
    const key = keys.replica(replica.index, replica.member);
    const watcher = await client.watch().key(key).create();
    watcher.on('delete', () => tenure.lose(`${key} was deleted`));
    watcher.on('put', (kv) => {
      if (Number(kv.create_revision) !== replica.createRevision)
        tenure.lose(`${key} was made again`);
    });
    watcher.on('error', (err: Error) => tenure.lose(`the watch of ${key} failed: ${err.message}`));
    tenure.stopWatching = () => watcher.cancel();
    const { kvs } = await client.get(key).exec();
    if (Number(kvs[0]?.create_revision ?? 0) !== replica.createRevision)
      tenure.lose(`${key} is no longer this replica's`);
    return tenure;
  }

  get lost(): string | undefined {
    return this.lostReason;
  }

  holds(): boolean {
    return this.lostReason === undefined && this.lease.isValid();
  }

  /** Calls `listener` once when the tenure ends (at once if it has). */
  onLost(listener: (reason: string) => void): void {
    if (this.lostReason !== undefined) listener(this.lostReason);
    else this.listeners.add(listener);
  }

  lose(reason: string): void {
    if (this.lostReason !== undefined) return;
    this.lostReason = reason;
    void this.close();
    for (const listener of this.listeners) listener(reason);
    this.listeners.clear();
  }

  /**
   * Writes `inSync` into the replica's key, which makes it promotable: only while the key is
   * still this replica's (same create revision, same lease). Retries while etcd does not answer,
   * until the tenure ends or is closed; false when the key is no longer this replica's, or the
   * tenure ended or was closed first.
   */
  async markInSync(): Promise<boolean> {
    const key = this.keys.replica(this.index, this.replica.member);
    const value: ReplicaValue = {
      member: this.replica.member,
      address: this.replica.address,
      primaryEpoch: this.primaryEpoch,
      inSync: true,
    };
    const { signal } = this.closed;
    return retry(
      async () => {
        if (!this.holds()) return false;
        const result = await this.client
          .if(key, 'Create', '==', this.replica.createRevision)
          .and(key, 'Lease', '==', this.lease.id)
          .then(this.client.put(key).value(JSON.stringify(value)).lease(this.lease.id))
          .commit();
        if (!result.succeeded) this.lose(`${key} is no longer this replica's`);
        return result.succeeded;
      },
      {
        policy: backoffPolicies.tenureWrite,
        signal,
        onRetry: ({ error }) =>
          this.logger.warn('marking the replica in sync failed; retrying', { err: error }),
      },
    ).catch((err: unknown) => {
      if (signal.aborted) return false;
      throw err;
    });
  }

  /** Stops watching and `markInSync` (idempotent); does not end the tenure. */
  async close(): Promise<void> {
    this.closed.abort(new Error(`the replica tenure of shard ${this.index} is closed`));
    const stop = this.stopWatching;
    this.stopWatching = undefined;
    await stop?.().catch(() => undefined);
  }
}
