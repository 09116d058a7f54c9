import { castGrpcError, EtcdLeaseInvalidError, type Etcd3, type Lease } from 'etcd3';
import type { Logger } from '@pserver/logging';
import { etcdMembers } from './etcd';

export interface LeaseKeeperOptions {
  ttlSeconds: number;
  /**
   * The share of the TTL trusted after a keep-alive was sent (default 2/3): the rest covers clock
   * rate differences and event-loop stalls between this process and etcd.
   */
  trustedFraction?: number;
  logger: Logger;
  /** Where retry jitter comes from (tests make it deterministic). */
  random?: () => number;
}

/** One keep-alive sent: when, and to which member (an index of `members`). */
interface Attempt {
  sentAtMs: number;
  member: number;
}

/** When keep-alives are sent: the whole policy, as numbers of one TTL. */
export interface KeepAlivePolicy {
  /** From one keep-alive to the next, whether the last one was answered yet or not. */
  intervalMs: number;
  /** After a keep-alive that failed, the next follows after this many ms… */
  retryDelayMs: number;
  /** …plus up to this many ms, so that many processes cut off together do not retry in step. */
  retryJitterMs: number;
  /** At most this many keep-alives unanswered at once (an etcd slower than that cannot keep it). */
  maxInFlight: number;
}

/**
 * A keep-alive every TTL/6, sent whether or not the last one was answered: an etcd that answers
 * slowly, rather than not at all, keeps the lease as long as it answers within TTL/2 (the trusted
 * 2/3 TTL less one interval), and an event-loop stall of up to TTL/2 costs no lease. Each attempt
 * may run for the trusted 2/3 TTL (an answer after that could extend nothing); a failed one is
 * retried after 100–250 ms (etcd3's own lease loop retries after 100 ms).
 */
export function keepAlivePolicy(ttlSeconds: number): KeepAlivePolicy {
  return {
    intervalMs: (ttlSeconds * 1000) / 6,
    retryDelayMs: 100,
    retryJitterMs: 150,
    maxInFlight: 4,
  };
}

/**
 * A lease kept alive with a local, monotonic deadline (DESIGN section 5). A lease is not a lock:
 * etcd may already have expired it while this process, paused or cut off, still believes it holds
 * it — the etcd3 client reports a lost lease about 3 s after etcd has deleted the keys. So the
 * holder trusts the lease only until `sent + TTL·trustedFraction`, measured with
 * `performance.now()` from the moment each successful keep-alive was sent, and checks `isValid()`
 * synchronously before anything that must not happen after expiry.
 *
 * This class alone decides when a lease is lost: keep-alives go on at their cadence while earlier
 * ones are unanswered, and a failed one is retried promptly (`keepAlivePolicy`), until the local
 * deadline; only that deadline, or etcd answering that the lease is gone, ends it. A short etcd
 * blip therefore costs a few retries, and a slow etcd more keep-alives in flight, not the lease.
 */
export class LeaseKeeper {
  private validUntilMs: number;
  private expired = false;
  private closed = false;
  private failedAttempts = 0;
  /** When the last keep-alive etcd answered was sent (`performance.now()`). */
  private lastAnsweredSentAtMs: number;
  /** Keep-alives sent and not yet answered; `newest` is the last one sent. */
  private readonly inFlight = new Set<Attempt>();
  private newest: Attempt | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private readonly expiryListeners = new Set<(reason: string) => void>();
  private readonly policy: KeepAlivePolicy;
  /** Of several members' clients, the one keep-alives go to now (the next after a failure). */
  private member = 0;

  private constructor(
    private readonly lease: Lease,
    readonly id: string,
    private grantedTtlSeconds: number,
    sentAtMs: number,
    private readonly options: LeaseKeeperOptions,
    /** A client of each etcd member (`etcdMembers`); empty: etcd3 picks one for each call. */
    private readonly members: Etcd3[],
  ) {
    this.policy = keepAlivePolicy(options.ttlSeconds);
    this.lastAnsweredSentAtMs = sentAtMs;
    this.validUntilMs = this.deadlineFrom(sentAtMs);
    this.armDeadline();
    this.scheduleKeepalive(this.policy.intervalMs);
  }

  /** Grants a lease and starts keeping it alive. */
  static async grant(client: Etcd3, options: LeaseKeeperOptions): Promise<LeaseKeeper> {
    const lease = client.lease(options.ttlSeconds, { autoKeepAlive: false });
    const sentAtMs = performance.now();
    try {
      const id = await lease.grant();
      // The grant itself carries no TTL: one keep-alive tells what etcd granted (it may raise it).
      // Bounded like every attempt: a stream call has no deadline of its own.
      const response = await lease.keepaliveOnce({
        deadline: Date.now() + options.ttlSeconds * 1000 * (options.trustedFraction ?? 2 / 3),
      });
      const members = etcdMembers(client);
      return new LeaseKeeper(lease, id, Number(response.TTL), sentAtMs, options, members);
    } catch (err) {
      // Not kept alive: etcd expires it (if it was granted at all) after its TTL.
      lease.release();
      throw err;
    }
  }

  /** Monotonic time (`performance.now()`) until which the lease may be trusted. */
  get validUntil(): number {
    return this.validUntilMs;
  }

  /** Whether the lease may still be trusted: check it synchronously right before acting. */
  isValid(): boolean {
    if (this.expired) return false;
    if (performance.now() >= this.validUntilMs) this.expire('the local lease deadline passed');
    return !this.expired;
  }

  /** Called once, when the lease can no longer be trusted (not after `close` or `revoke`). */
  onExpired(listener: (reason: string) => void): void {
    this.expiryListeners.add(listener);
  }

  /** Stops keeping the lease alive and revokes it: its keys disappear at once. */
  async revoke(): Promise<void> {
    this.stop();
    await this.lease.revoke();
  }

  /** Stops keeping the lease alive without revoking it (it expires after its TTL). */
  close(): void {
    this.stop();
    this.lease.release();
  }

  private stop(): void {
    this.closed = true;
    clearTimeout(this.keepaliveTimer);
    clearTimeout(this.deadlineTimer);
  }

  private deadlineFrom(sentAtMs: number): number {
    const ttl = Math.min(this.options.ttlSeconds, this.grantedTtlSeconds);
    return sentAtMs + ttl * 1000 * (this.options.trustedFraction ?? 2 / 3);
  }

  private scheduleKeepalive(delayMs: number): void {
    clearTimeout(this.keepaliveTimer);
    if (this.closed || this.expired) return;
    this.keepaliveTimer = setTimeout(() => void this.keepalive(), delayMs);
  }

  private retryDelayMs(): number {
    const { retryDelayMs, retryJitterMs } = this.policy;
    return retryDelayMs + (this.options.random ?? Math.random)() * retryJitterMs;
  }

  private async keepalive(): Promise<void> {
    if (this.closed || !this.isValid()) return;
    // The next one is due after the interval whatever becomes of this one: a slow etcd is met
    // with more keep-alives in flight, not with attempts given up and sent again.
    this.scheduleKeepalive(this.policy.intervalMs);
    if (this.inFlight.size >= this.policy.maxInFlight) return;
    // With several members, one still silent on an earlier keep-alive is passed over: a member
    // cut off costs one interval.
    if (this.members.length > 1 && [...this.inFlight].some((a) => a.member === this.member))
      this.member = (this.member + 1) % this.members.length;
    const attempt: Attempt = { sentAtMs: performance.now(), member: this.member };
    this.inFlight.add(attempt);
    this.newest = attempt;
    try {
      // An answer later than the trusted window after it was sent could extend nothing.
      const deadline = Date.now() + (this.deadlineFrom(attempt.sentAtMs) - attempt.sentAtMs);
      const response = await this.keepaliveOnce(attempt.member, deadline);
      if (this.closed || this.expired) return;
      const ttl = Number(response.TTL);
      if (!(ttl > 0)) {
        this.expire('etcd says the lease has expired');
        return;
      }
      this.grantedTtlSeconds = ttl;
      this.lastAnsweredSentAtMs = Math.max(this.lastAnsweredSentAtMs, attempt.sentAtMs);
      this.validUntilMs = Math.max(this.validUntilMs, this.deadlineFrom(attempt.sentAtMs));
      this.armDeadline();
      this.member = attempt.member;
      if (this.failedAttempts > 0)
        this.options.logger.info('lease keep-alive succeeded again', {
          lease: this.id,
          failedAttempts: this.failedAttempts,
        });
      this.failedAttempts = 0;
    } catch (err) {
      if (this.closed || this.expired) return;
      // etcd answered, and the answer is that the lease is gone (TTL 0 or not found).
      if (err instanceof EtcdLeaseInvalidError) {
        this.expire('etcd says the lease has expired');
        return;
      }
      this.failedAttempts++;
      // With several members, the next keep-alive goes to the next: one failing costs one attempt.
      if (this.members.length > 0 && attempt.member === this.member)
        this.member = (this.member + 1) % this.members.length;
      // A failure of the newest keep-alive is retried sooner than the interval.
      const retryInMs = attempt === this.newest ? this.retryDelayMs() : undefined;
      if (retryInMs !== undefined) this.scheduleKeepalive(retryInMs);
      this.options.logger.warn('lease keep-alive failed; retrying', {
        lease: this.id,
        attempt: this.failedAttempts,
        retryInMs: retryInMs === undefined ? undefined : Math.round(retryInMs),
        trustedForMs: Math.round(this.validUntilMs - performance.now()),
        err,
      });
    } finally {
      this.inFlight.delete(attempt);
    }
  }

  /**
   * One keep-alive by `deadline`: through the lease (etcd3 draws a member), or with several
   * members through `member`. etcd answers TTL 0 for a lease it no longer has.
   */
  private async keepaliveOnce(member: number, deadline: number): Promise<{ TTL: string }> {
    const client = this.members[member];
    if (!client) return this.lease.keepaliveOnce({ deadline });
    const stream = await client.leaseClient.leaseKeepAlive({ deadline });
    try {
      return await new Promise((resolve, reject) => {
        stream.on('data', resolve);
        stream.on('error', (err: Error) => reject(castGrpcError(err)));
        stream.write({ ID: this.id });
      });
    } finally {
      stream.end();
    }
  }

  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    // Timers run on the event loop's cached, millisecond clock and may fire a little before the
    // deadline by `performance.now()`: then arm again rather than stop watching.
    this.deadlineTimer = setTimeout(
      () => {
        if (this.isValid()) this.armDeadline();
      },
      Math.max(0, this.validUntilMs - performance.now()) + 1,
    );
  }

  private expire(reason: string): void {
    if (this.expired || this.closed) return;
    this.expired = true;
    this.stop();
    // What the keep-alives were doing tells a silent etcd (unanswered) from a refusing one (failed).
    this.options.logger.error('lease no longer trusted', {
      lease: this.id,
      reason,
      lastAnsweredSentMsAgo: Math.round(performance.now() - this.lastAnsweredSentAtMs),
      unanswered: this.inFlight.size,
      failed: this.failedAttempts,
    });
    for (const listener of this.expiryListeners) listener(reason);
  }
}
