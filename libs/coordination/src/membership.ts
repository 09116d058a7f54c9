import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import { CoordinationError } from './errors';
import { parseAssignment, type ShardAssignment } from './job-state';
import type { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import { nextWatchEvent } from './wait-for-watch';

/**
 * A pserver's side of the assignment protocol: register `pservers/<member>` under its lease,
 * wait for the master to put an `assign/<i>` under that same lease, and watch for losing it.
 */
export class PserverMembership {
  private constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly lease: LeaseKeeper,
    readonly member: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Registers the member. A member name already registered under another live lease belongs to
   * another process: PSERVER_MEMBER_TAKEN (two processes must never act as one member).
   */
  static async register(
    client: Etcd3,
    keys: JobKeys,
    lease: LeaseKeeper,
    member: string,
    address: string,
    logger: Logger,
  ): Promise<PserverMembership> {
    const key = keys.pserver(member);
    const value = JSON.stringify({ address, startedAtUnixMs: Date.now() });
    const result = await client
      .if(key, 'Create', '==', 0)
      .then(client.put(key).value(value).lease(lease.id))
      .else(client.get(key))
      .commit();
    if (!result.succeeded) {
      const existing = result.responses[0]?.response_range?.kvs[0];
      if (existing?.lease !== lease.id) {
        throw new CoordinationError(
          'PSERVER_MEMBER_TAKEN',
          `member ${member} is already registered by another live process`,
        );
      }
    }
    logger.info('registered as a pserver', { member, address, lease: lease.id });
    return new PserverMembership(client, keys, lease, member, logger);
  }

  /** Resolves with the index assigned to this member (waiting as a hot spare until one frees). */
  async waitForAssignment(signal: AbortSignal): Promise<ShardAssignment> {
    for (;;) {
      signal.throwIfAborted();
      const { kvs, header } = await this.client.getAll().prefix(this.keys.assignPrefix).exec();
      const mine = kvs.flatMap((kv) => parseAssignment(this.keys, kv)).find((a) => this.isMine(a));
      if (mine) return mine;
      const watcher = await this.client
        .watch()
        .prefix(this.keys.assignPrefix)
        .startRevision(String(Number(header.revision) + 1))
        .create();
      try {
        await nextWatchEvent(watcher, ['put'], 10_000, signal);
      } finally {
        await watcher.cancel().catch(() => undefined);
      }
    }
  }

  /** Whether `assign/<index>` is still this member's, with this epoch (a linearizable read). */
  async holds(index: number, epoch: number): Promise<boolean> {
    const { kvs } = await this.client.get(this.keys.assign(index)).exec();
    const assignment = kvs.flatMap((kv) => parseAssignment(this.keys, kv))[0];
    return assignment !== undefined && this.isMine(assignment) && assignment.epoch === epoch;
  }

  /**
   * Calls `onLost` once the assignment is deleted or replaced. The local lease deadline fences
   * the pserver in any case; this only makes it stop sooner when etcd is reachable.
   */
  async watchAssignment(
    index: number,
    epoch: number,
    onLost: (reason: string) => void,
  ): Promise<() => Promise<void>> {
    const watcher = await this.client.watch().key(this.keys.assign(index)).create();
    watcher.on('delete', () => onLost(`assign/${index} was deleted (lease expired or revoked)`));
    // A watch etcd ended (compaction, a permission change) can no longer tell this pserver that
    // it lost the index: it stops acting on the shard rather than serve unwatched.
    watcher.on('error', (err: Error) =>
      onLost(`the watch of assign/${index} failed: ${err.message}`),
    );
    watcher.on('put', (kv) => {
      if (Number(kv.create_revision) !== epoch)
        onLost(`assign/${index} now belongs to epoch ${kv.create_revision}`);
    });
    if (!(await this.holds(index, epoch))) onLost(`assign/${index} is no longer this member's`);
    return () => watcher.cancel();
  }

  private isMine(assignment: ShardAssignment): boolean {
    return assignment.member === this.member && assignment.lease === this.lease.id;
  }
}
