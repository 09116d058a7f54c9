import { jobFinished } from './job-finish';
import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import { consistencyFromStored, type JobConsistency } from './consistency';
import { openEtcd, type EtcdOptions } from './etcd';
import { EtcdShardTenure } from './etcd-shard-tenure';
import { parseAssignment } from './job-state';
import { JobKeys } from './keys';
import { parseFinalSeq, parseReceiver, type FinalSeq, type MoveReceiverValue } from './live-move';
import { parseLiveReshape } from './reshape';
import { LeaseKeeper } from './lease-keeper';
import { PserverMembership, type MemberRole } from './membership';
import { ReplicaTenure } from './replica-tenure';
import { TrainerRoster } from './trainer-roster';
import { untilEveryIndexPut } from './wait-for-watch';

/** The longest a wait for the hand-backs goes without reading them again (a missed event). */
const handBacksRereadMs = 1_000;

export interface ClusterMemberOptions {
  endpoints: string[];
  security?: EtcdOptions['security'];
  job: string;
  member: string;
  leaseTtlSeconds: number;
  logger: Logger;
}

/** A live change this member receives index `index` of `to` for. */
export interface LiveMove {
  from: number;
  to: number;
  index: number;
  /** The `reshape/live` key's create revision: tells this change from a later one. */
  revision: number;
  /** The old count's primaries: index → member, address and epoch. */
  primaries: Map<number, { member: string; address: string; epoch: number }>;
}

/** A role taken up: the tenure of a primary, or of a replica. */
export type TakenRole =
  { kind: 'primary'; tenure: EtcdShardTenure } | { kind: 'replica'; tenure: ReplicaTenure };

/**
 * A pserver's presence in the cluster: its etcd client, its lease and its registration. It owns
 * everything of etcd the pserver needs and hands out one `EtcdShardTenure` per assignment, so the
 * pserver app holds no etcd client of its own.
 */
export class ClusterMember {
  private membership: PserverMembership | undefined;
  private roster: Promise<TrainerRoster> | undefined;

  private constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly lease: LeaseKeeper,
    private readonly options: ClusterMemberOptions,
  ) {}

  /** Connects to etcd (checked by one read) and grants the lease; registers nothing yet. */
  static async connect(options: ClusterMemberOptions): Promise<ClusterMember> {
    const keys = new JobKeys(options.job);
    const client = await openEtcd({
      endpoints: options.endpoints,
      security: options.security,
      probeKey: keys.desired,
    });
    try {
      const lease = await LeaseKeeper.grant(client, {
        ttlSeconds: options.leaseTtlSeconds,
        logger: options.logger,
      });
      return new ClusterMember(client, keys, lease, options);
    } catch (err) {
      client.close();
      throw err;
    }
  }

  /** Monotonic time until which the lease may be trusted (metrics). */
  get leaseValidUntil(): number {
    return this.lease.validUntil;
  }

  /** Whether the lease (and so the registration) may still be trusted. */
  isAlive(): boolean {
    return this.lease.isValid();
  }

  /** Calls `listener` once when the lease can no longer be trusted: the registration is gone. */
  onEnded(listener: (reason: string) => void): void {
    this.lease.onExpired(listener);
  }

  /** Registers `pservers/<member>` under the lease (PSERVER_MEMBER_TAKEN when another holds it). */
  async register(address: string): Promise<void> {
    const { options } = this;
    this.membership = await PserverMembership.register(
      this.client,
      this.keys,
      this.lease,
      options.member,
      address,
      options.logger,
    );
  }

  /**
   * Waits (a hot spare) until the master gives this member a role and takes it up: a shard's
   * tenure as its primary, or a replica's tenure.
   */
  async nextRole(signal: AbortSignal): Promise<TakenRole> {
    return this.takeUp(await this.registered().waitForRole(signal));
  }

  /** This member's role now (one read), taken up; undefined while it has none. */
  async currentRole(): Promise<TakenRole | undefined> {
    const role = await this.registered().currentRole();
    return role && this.takeUp(role);
  }

  private async takeUp(role: MemberRole): Promise<TakenRole> {
    const { client, keys, lease, options } = this;
    if (role.kind === 'primary')
      return {
        kind: 'primary',
        tenure: await EtcdShardTenure.open(
          client,
          keys,
          lease,
          this.registered(),
          role.assignment,
          options.logger,
        ),
      };
    return {
      kind: 'replica',
      tenure: await ReplicaTenure.open(
        client,
        keys,
        lease,
        role.replica,
        role.primary,
        options.logger,
      ),
    };
  }

  /** The job's consistency mode as the master fixed it (`config/consistency`; ASYNC when absent). */
  async jobConsistency(): Promise<JobConsistency> {
    const stored = await this.client.get(this.keys.consistency).string();
    return consistencyFromStored(stored ?? undefined);
  }

  /** The job's trainers with a live session (the SYNC and SSP roster), watched until `leave`. */
  trainerRoster(relistIntervalMs: number): Promise<TrainerRoster> {
    this.roster ??= TrainerRoster.open(this.client, this.keys, {
      relistIntervalMs,
      logger: this.options.logger.child({ component: 'roster' }),
    });
    // A failed first read is tried again by the next caller.
    this.roster.catch(() => (this.roster = undefined));
    return this.roster;
  }

  private registered(): PserverMembership {
    if (!this.membership) throw new Error('ClusterMember: register first');
    return this.membership;
  }

  /** Resolves once the job is finished (FinishJob), at once if it is; rejects when `signal` aborts. */
  jobFinished(signal: AbortSignal): Promise<void> {
    return jobFinished(this.client, this.keys, signal);
  }

  /**
   * The live change of the shard count this member receives slices for (`reshape/live`, and a
   * `reshape/receiver/<index>` naming it), with the old count's primaries (index → address and
   * epoch); undefined when there is none (one read).
   */
  async liveMove(): Promise<LiveMove | undefined> {
    const { client, keys, options } = this;
    const result = await client
      .if(keys.liveReshape, 'Version', '>', -1)
      .then(
        client.get(keys.liveReshape),
        client.getAll().prefix(keys.receiverPrefix),
        client.getAll().prefix(keys.assignPrefix),
      )
      .commit();
    const [live, receivers, assignments] = result.responses.map((r) => r.response_range?.kvs ?? []);
    const liveKv = live?.[0];
    if (!liveKv) return undefined;
    const { from, to } = parseLiveReshape(liveKv.value.toString());
    const mine = (receivers ?? []).find(
      (kv) => parseReceiver(kv.value.toString())?.member === options.member,
    );
    const index = mine && keys.indexUnder(keys.receiverPrefix, mine.key.toString());
    if (index === undefined) return undefined;
    const primaries = new Map<number, { member: string; address: string; epoch: number }>();
    for (const assignment of (assignments ?? []).flatMap((kv) => parseAssignment(keys, kv)))
      if (assignment.shardCount === from)
        primaries.set(assignment.index, {
          member: assignment.member,
          address: assignment.address,
          epoch: assignment.epoch,
        });
    return { from, to, index, revision: Number(liveKv.create_revision), primaries };
  }

  /**
   * Resolves once every old index below `from` was handed back, with what each primary said of
   * its last push (`reshape/final-seq/<i>`): watched, read again at each put. Rejects when
   * `signal` aborts.
   */
  handBacks(from: number, signal: AbortSignal): Promise<Map<number, FinalSeq>> {
    return untilEveryIndexPut(
      this.client,
      this.keys,
      this.keys.finalSeqPrefix,
      from,
      parseFinalSeq,
      {
        rereadMs: handBacksRereadMs,
        signal,
      },
    );
  }

  /** The members the live change names receivers (`reshape/receiver/`), one read. */
  async liveReceivers(): Promise<string[]> {
    const values = await this.client.getAll().prefix(this.keys.receiverPrefix).strings();
    return Object.values(values).flatMap((value) => parseReceiver(value)?.member ?? []);
  }

  /**
   * The receiver `reshape/receiver/<index>` names for the live change, and the count it changes
   * to, if any (one read): what an old primary checks before it gives a receiver a copy.
   */
  async receiverOf(index: number): Promise<(MoveReceiverValue & { to: number }) | undefined> {
    const { client, keys } = this;
    const result = await client
      .if(keys.liveReshape, 'Version', '>', -1)
      .then(client.get(keys.liveReshape), client.get(keys.receiver(index)))
      .commit();
    const [live, receiver] = result.responses.map((r) => r.response_range?.kvs?.[0]);
    const named = receiver && parseReceiver(receiver.value.toString());
    if (!live || !named) return undefined;
    return { ...named, to: parseLiveReshape(live.value.toString()).to };
  }

  /** Says this member serves no shard (after its tenure ended while it stays registered). */
  async withdrawServing(): Promise<void> {
    await this.membership?.announce(undefined);
  }

  /** Revokes the lease (the registration and any assignment go at once) and closes the client. */
  async leave(): Promise<void> {
    await this.closeRoster();
    try {
      await this.lease.revoke();
    } finally {
      this.client.close();
    }
  }

  /** Closes the client without revoking: the lease expires after its TTL. */
  close(): void {
    void this.closeRoster();
    this.lease.close();
    this.client.close();
  }

  private async closeRoster(): Promise<void> {
    const roster = await this.roster?.catch(() => undefined);
    await roster?.close();
  }
}
