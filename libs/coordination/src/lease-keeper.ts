import type { Etcd3, Lease } from 'etcd3';
import type { Logger } from '@pserver/logging';

export interface LeaseKeeperOptions {
  ttlSeconds: number;
  /**
   * The share of the TTL trusted after a keep-alive was sent (default 2/3): the rest covers clock
   * rate differences and event-loop stalls between this process and etcd.
   */
  trustedFraction?: number;
  logger: Logger;
}

/**
 * A lease kept alive with a local, monotonic deadline (DESIGN section 5). A lease is not a lock:
 * etcd may already have expired it while this process, paused or cut off, still believes it holds
 * it — the etcd3 client reports a lost lease about 3 s after etcd has deleted the keys. So the
 * holder trusts the lease only until `sent + TTL·trustedFraction`, measured with
 * `performance.now()` from the moment each keep-alive was sent, and checks `isValid()`
 * synchronously before anything that must not happen after expiry.
 */
export class LeaseKeeper {
  private validUntilMs: number;
  private expired = false;
  private closed = false;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private readonly expiryListeners = new Set<(reason: string) => void>();

  private constructor(
    private readonly lease: Lease,
    readonly id: string,
    private grantedTtlSeconds: number,
    sentAtMs: number,
    private readonly options: LeaseKeeperOptions,
  ) {
    this.validUntilMs = this.deadlineFrom(sentAtMs);
    this.armDeadline();
    this.scheduleKeepalive();
  }

  /** Grants a lease and starts keeping it alive. */
  static async grant(client: Etcd3, options: LeaseKeeperOptions): Promise<LeaseKeeper> {
    const lease = client.lease(options.ttlSeconds, { autoKeepAlive: false });
    const sentAtMs = performance.now();
    const id = await lease.grant();
    // The grant itself carries no TTL: one keep-alive tells what etcd granted (it may raise it).
    const response = await lease.keepaliveOnce();
    return new LeaseKeeper(lease, id, Number(response.TTL), sentAtMs, options);
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

  /** Called once, when the lease can no longer be trusted. */
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

  private scheduleKeepalive(): void {
    if (this.closed || this.expired) return;
    this.keepaliveTimer = setTimeout(
      () => void this.keepalive(),
      (this.options.ttlSeconds * 1000) / 3,
    );
  }

  private async keepalive(): Promise<void> {
    const sentAtMs = performance.now();
    try {
      // A deadline, so that a keep-alive lost in a stalled connection does not stop the next ones.
      const response = await this.lease.keepaliveOnce({
        deadline: Date.now() + (this.options.ttlSeconds * 1000) / 3,
      });
      if (this.closed) return;
      const ttl = Number(response.TTL);
      if (!(ttl > 0)) {
        this.expire('etcd says the lease has expired');
        return;
      }
      this.grantedTtlSeconds = ttl;
      this.validUntilMs = Math.max(this.validUntilMs, this.deadlineFrom(sentAtMs));
      this.armDeadline();
    } catch (err) {
      // Keep trying until the deadline passes: etcd may be slow or briefly unreachable.
      if (!this.closed)
        this.options.logger.warn('lease keep-alive failed', { lease: this.id, err });
    }
    this.scheduleKeepalive();
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
    this.options.logger.error('lease no longer trusted', { lease: this.id, reason });
    for (const listener of this.expiryListeners) listener(reason);
  }
}
