import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import { openEtcd, type EtcdOptions } from './etcd';
import { EtcdShardTenure } from './etcd-shard-tenure';
import { JobKeys } from './keys';
import { LeaseKeeper } from './lease-keeper';
import { PserverMembership } from './membership';

export interface ClusterMemberOptions {
  endpoints: string[];
  security?: EtcdOptions['security'];
  job: string;
  member: string;
  leaseTtlSeconds: number;
  logger: Logger;
}

/**
 * A pserver's presence in the cluster: its etcd client, its lease and its registration. It owns
 * everything of etcd the pserver needs and hands out one `EtcdShardTenure` per assignment, so the
 * pserver app holds no etcd client of its own.
 */
export class ClusterMember {
  private membership: PserverMembership | undefined;

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

  /** Waits (a hot spare) for an index assigned to this member and takes up its tenure. */
  async nextTenure(signal: AbortSignal): Promise<EtcdShardTenure> {
    const membership = this.membership;
    if (!membership) throw new Error('ClusterMember: register first');
    const assignment = await membership.waitForAssignment(signal);
    return EtcdShardTenure.open(
      this.client,
      this.keys,
      this.lease,
      membership,
      assignment,
      this.options.logger,
    );
  }

  /** Says this member serves no shard (after its tenure ended while it stays registered). */
  async withdrawServing(): Promise<void> {
    await this.membership?.announce(undefined);
  }

  /** Revokes the lease (the registration and any assignment go at once) and closes the client. */
  async leave(): Promise<void> {
    try {
      await this.lease.revoke();
    } finally {
      this.client.close();
    }
  }

  /** Closes the client without revoking: the lease expires after its TTL. */
  close(): void {
    this.lease.close();
    this.client.close();
  }
}
