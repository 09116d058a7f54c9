import type { Etcd3, Watcher } from 'etcd3';
import type { Logger } from '@pserver/logging';
import { CoordinationError } from './errors';
import {
  parseAssignment,
  parseReplica,
  type MemberValue,
  type ReplicaAssignment,
  type ShardAssignment,
} from './job-state';
import type { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import { nextWatchEvent } from './wait-for-watch';

/** An assignment a pserver may act on: written with the shard count and block size. */
export type CompleteAssignment = ShardAssignment & { shardCount: number; blockSize: number };

/**
 * What the master made of this member: the primary of a shard, or a replica of one (with the
 * primary's assignment it replicates for).
 */
export type MemberRole =
  | { kind: 'primary'; assignment: CompleteAssignment }
  | { kind: 'replica'; replica: ReplicaAssignment; primary: CompleteAssignment };

/**
 * A pserver's side of the assignment protocol: register `pservers/<member>` under its lease,
 * wait for the master to put an `assign/<i>` under that same lease, watch for losing it, and
 * announce in the member's value when it serves the shard.
 */
export class PserverMembership {
  private warnedIncomplete = new Set<number>();

  private constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly lease: LeaseKeeper,
    readonly member: string,
    private readonly value: MemberValue,
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
    const value: MemberValue = { address, startedAtUnixMs: Date.now() };
    const result = await client
      .if(key, 'Create', '==', 0)
      .then(client.put(key).value(JSON.stringify(value)).lease(lease.id))
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
    return new PserverMembership(client, keys, lease, member, value, logger);
  }

  /**
   * Resolves with this member's role: the primary of an index (a primary role wins), or a replica
   * of one whose primary is assigned; waits as a hot spare until it has one. An assignment without
   * a shard count and block size (written by an older master) is never acted on: the leader
   * replaces it with a complete one and a new epoch.
   */
  async waitForRole(signal: AbortSignal): Promise<MemberRole> {
    for (;;) {
      signal.throwIfAborted();
      const { role, revision } = await this.readRole();
      if (role) return role;
      // Either prefix's first event, then read again. Each watcher is listened to as soon as it
      // exists: one created while the other is still being created may already have its event.
      const stop = new AbortController();
      const onAbort = (): void => stop.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      const watchers: Watcher[] = [];
      try {
        await new Promise<void>((resolve, reject) => {
          for (const prefix of [this.keys.assignPrefix, this.keys.replicaRoot])
            this.client
              .watch()
              .prefix(prefix)
              .startRevision(String(revision + 1))
              .create()
              .then((watcher) => {
                // Made after the wait ended: not needed.
                if (stop.signal.aborted) return void watcher.cancel().catch(() => undefined);
                watchers.push(watcher);
                // An abort rejects it; the loop's first line rethrows the caller's.
                void nextWatchEvent(watcher, ['put', 'delete'], 10_000, stop.signal).then(
                  resolve,
                  () => resolve(),
                );
              }, reject);
        });
      } finally {
        signal.removeEventListener('abort', onAbort);
        stop.abort();
        await Promise.all(watchers.map((w) => w.cancel().catch(() => undefined)));
      }
    }
  }

  /** This member's role now, by one linearizable read (undefined: a spare). */
  async currentRole(): Promise<MemberRole | undefined> {
    return (await this.readRole()).role;
  }

  private async readRole(): Promise<{ role: MemberRole | undefined; revision: number }> {
    const result = await this.client
      .if(this.keys.desired, 'Version', '>', -1)
      .then(
        this.client.getAll().prefix(this.keys.assignPrefix),
        this.client.getAll().prefix(this.keys.replicaRoot),
      )
      .commit();
    const [assignKvs, replicaKvs] = result.responses.map((r) => r.response_range?.kvs ?? []);
    const assignments = (assignKvs ?? []).flatMap((kv) => parseAssignment(this.keys, kv));
    const revision = Number(result.header.revision);
    const mine = assignments.filter((a) => this.isMine(a));
    const complete = mine.find(isComplete);
    if (complete) return { role: { kind: 'primary', assignment: complete }, revision };
    for (const a of mine) this.warnIncomplete(a);
    const replica = (replicaKvs ?? [])
      .flatMap((kv) => parseReplica(this.keys, kv))
      .find((r) => r.member === this.member && r.lease === this.lease.id);
    const primary =
      replica &&
      assignments.find((a) => a.index === replica.index && a.epoch === replica.primaryEpoch);
    if (replica && primary && isComplete(primary))
      return { role: { kind: 'replica', replica, primary }, revision };
    return { role: undefined, revision };
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

  /**
   * Writes into `pservers/<member>` that this member serves `serving` (or nothing, when
   * undefined), only while the registration is under its lease and, for a shard, `assign/<i>`
   * is this member's with that epoch. False when those no longer hold.
   */
  async announce(serving: { index: number; epoch: number } | undefined): Promise<boolean> {
    const key = this.keys.pserver(this.member);
    const value: MemberValue = serving ? { ...this.value, serving } : this.value;
    let txn = this.client.if(key, 'Lease', '==', this.lease.id);
    if (serving) {
      const assign = this.keys.assign(serving.index);
      txn = txn
        .and(assign, 'Lease', '==', this.lease.id)
        .and(assign, 'Create', '==', serving.epoch);
    }
    const writes = [this.client.put(key).value(JSON.stringify(value)).lease(this.lease.id)];
    if (serving)
      writes.push(
        this.client.put(this.keys.lastServed(serving.index)).value(String(serving.epoch)),
      );
    const result = await txn.then(...writes).commit();
    return result.succeeded;
  }

  private warnIncomplete(assignment: ShardAssignment): void {
    if (this.warnedIncomplete.has(assignment.epoch)) return;
    this.warnedIncomplete.add(assignment.epoch);
    this.logger.warn(
      'assign/<i> names this member but carries no shard count or block size (written by an older master); ' +
        'not acting on it until the leader assigns it again',
      { index: assignment.index, epoch: assignment.epoch },
    );
  }

  private isMine(assignment: ShardAssignment): boolean {
    return assignment.member === this.member && assignment.lease === this.lease.id;
  }
}

function isComplete(assignment: ShardAssignment): assignment is CompleteAssignment {
  return assignment.shardCount !== undefined && assignment.blockSize !== undefined;
}
