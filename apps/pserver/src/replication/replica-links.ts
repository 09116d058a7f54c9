import type { ReplicaAssignment } from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import type { ForwardRequest } from '@pserver/proto';
import { PserverError } from '../shard/errors';
import type { PushRecord } from '../shard/push-record';
import { ForwardBatches, type OpenForwardStream } from './forward-batches';

export interface ReplicaLinksOptions {
  index: number;
  /** The primary's shard epoch: every forward names it. */
  epoch: number;
  /** The primary's last applied sequence number, read synchronously. */
  appliedSeq: () => number;
  forward: OpenForwardStream;
  logger: Logger;
  /** Sends the shard's digest with a push every `everyMs` (0: never), computed by `compute`. */
  digest?: { everyMs: number; compute: () => string };
  /**
   * A waited replica that has left a push unapplied for `timeoutMs` (alive, but cut off from the
   * primary or stuck) is dropped: `drop` deletes its key in etcd, and only once that committed
   * (true) does the primary stop waiting for it.
   */
  lag?: { timeoutMs: number; drop: (replica: ReplicaAssignment) => Promise<boolean> };
}

/** A link's state: the copy not fetched yet, forwards flowing, or waited on (acks gate replies). */
type LinkState = 'joining' | 'following' | 'waited';

/** A replica key's identity: its member and the revision the key was made at. */
const keyOf = (replica: ReplicaAssignment): string =>
  `${replica.member}\u0000${replica.createRevision}`;

/** The primary's side of one replica. */
class ReplicaLink {
  state: LinkState = 'joining';
  /** The replica's last applied sequence number, as it acknowledged. */
  acked = 0;
  /** The first push it is waited for (set when it becomes waited). */
  waitFrom = Infinity;
  inSync = false;
  private readonly waiters: { seq: number; since: number; resolve: () => void }[] = [];
  private readonly closed = new AbortController();
  /** A drop of this replica's key is in flight. */
  dropping = false;
  private readonly forwards: ForwardBatches;

  constructor(
    readonly replica: ReplicaAssignment,
    private readonly links: ReplicaLinks,
  ) {
    this.forwards = new ForwardBatches({
      address: replica.address,
      member: replica.member,
      open: links.options.forward,
      onApplied: (seq) => this.acknowledged(seq),
      signal: this.closed.signal,
      logger: links.options.logger,
    });
  }

  get key(): string {
    return keyOf(this.replica);
  }

  /** Resolves once the replica applied `seq`, or the link is gone. */
  appliedAt(seq: number): Promise<void> {
    if (this.acked >= seq || this.closed.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq, since: performance.now(), resolve }));
  }

  /**
   * How long the oldest push waiting for this replica has waited, in ms (0: none waits). Waiters
   * are added in time order and removed without reordering: the first is the oldest.
   */
  oldestWaitMs(now: number): number {
    const oldest = this.waiters[0];
    return oldest ? now - oldest.since : 0;
  }

  /** Sends one push, in a batch with those queued meanwhile, until the replica applied it. */
  send(request: ForwardRequest): void {
    this.forwards.push({ ...request, inSync: this.inSync });
  }

  acknowledged(seq: number): void {
    if (seq <= this.acked) return;
    this.acked = seq;
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i]!;
      if (waiter.seq <= seq) {
        this.waiters.splice(i, 1);
        waiter.resolve();
      }
    }
    this.links.checkInSync(this);
  }

  close(): void {
    this.closed.abort();
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }
}

/**
 * The primary's side of replication (DESIGN section 8): one link per replica key of the shard for
 * this epoch, as the tenure's watch reports them. A replica fetches a copy of the shard
 * (`startFollowing`: forwards flow from the copy's sequence number on), loads it, and says so
 * (`loaded`): from then on the primary waits for it — every later push is acknowledged to its
 * trainer only after the replica applied it. Once it has applied every push before that moment
 * too, it is in sync, and is told so (it writes that into its key, which makes it promotable).
 * A replica stops being waited for only when its key is gone from etcd (its lease expired, or
 * this primary deleted it: the replica left a push unapplied too long), never before: a primary
 * never acknowledges with fewer replicas than etcd says hold every acknowledged push.
 */
export class ReplicaLinks {
  private readonly links = new Map<string, ReplicaLink>();
  private lastDigestMs = 0;
  private readonly lagTimer: NodeJS.Timeout | undefined;

  constructor(readonly options: ReplicaLinksOptions) {
    const lag = options.lag;
    if (lag) {
      // Checked often enough that a push waits at most the timeout plus a fortieth of it (at
      // most 250 ms) before the drop is asked for: the stall a cut-off replica costs the trainers.
      const everyMs = Math.max(10, Math.min(250, lag.timeoutMs / 40));
      this.lagTimer = setInterval(() => this.dropLagging(lag), everyMs);
      this.lagTimer.unref();
    }
  }

  /** Drops (in etcd first) every waited replica a push has waited for longer than the timeout. */
  private dropLagging(lag: NonNullable<ReplicaLinksOptions['lag']>): void {
    const now = performance.now();
    for (const [key, link] of this.links) {
      if (link.dropping || link.state !== 'waited' || link.oldestWaitMs(now) < lag.timeoutMs)
        continue;
      link.dropping = true;
      const { logger } = this.options;
      lag
        .drop(link.replica)
        .then((dropped) => {
          if (!dropped) return;
          logger.warn('dropped a replica that left a push unapplied too long', {
            member: link.replica.member,
            keyRevision: link.replica.createRevision,
            acked: link.acked,
            appliedSeq: this.options.appliedSeq(),
            waitedMs: Math.round(link.oldestWaitMs(performance.now())),
          });
          if (this.links.get(key) === link) this.links.delete(key);
          link.close();
        })
        .catch((err: unknown) =>
          logger.warn("dropping a lagging replica's key failed; trying again", { err }),
        )
        .finally(() => {
          link.dropping = false;
        });
    }
  }

  /** The replicas the tenure's watch reports for this epoch: links come and go with their keys. */
  update(replicas: readonly ReplicaAssignment[]): void {
    const keys = new Set<string>();
    for (const replica of replicas) {
      const key = keyOf(replica);
      keys.add(key);
      if (!this.links.has(key)) {
        this.links.set(key, new ReplicaLink(replica, this));
        this.options.logger.info('a replica joins', {
          member: replica.member,
          address: replica.address,
        });
      }
    }
    for (const [key, link] of this.links) {
      if (keys.has(key)) continue;
      link.close();
      this.links.delete(key);
      this.options.logger.warn('a replica left (its key is gone); no longer waiting for it', {
        member: link.replica.member,
        acked: link.acked,
      });
    }
  }

  /**
   * A replica begins to follow from the copy taken at the current sequence number (call in the
   * same tick the copy is taken). PSERVER_NOT_REPLICA when `member` is not a replica of this
   * primary.
   */
  startFollowing(member: string): number {
    const link = this.linkOf(member);
    // Waited for, it holds acknowledged pushes: starting it over would stop the waiting.
    if (link.state === 'waited')
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `member ${member} follows this primary already; a replica that lost its copy joins again under a new key`,
      );
    const seq = this.options.appliedSeq();
    // A replica that fetches again (its first copy failed to load) starts over from this copy.
    link.state = 'following';
    link.acked = seq;
    link.inSync = false;
    link.waitFrom = Infinity;
    return seq;
  }

  /** The replica loaded the copy of `seq`: it is waited for from the next push on. */
  loaded(member: string, seq: number): boolean {
    const link = this.linkOf(member);
    if (link.state === 'joining')
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `member ${member}: ReplicaLoaded before FetchSnapshot`,
      );
    link.acknowledged(seq);
    if (link.state !== 'waited') {
      link.state = 'waited';
      link.waitFrom = this.options.appliedSeq() + 1;
    }
    this.checkInSync(link);
    return link.inSync;
  }

  /**
   * Forwards push `seq` (just applied) to every following replica; resolves once every waited
   * replica applied it (or left).
   */
  replicate(seq: number, push: PushRecord): Promise<void> {
    const request: ForwardRequest = {
      index: this.options.index,
      primaryEpoch: this.options.epoch,
      seq,
      trainerId: push.trainerId,
      step: push.step,
      grads: push.grads,
      sparse: push.sparse,
      evictions: push.evictions,
      digest: this.digestDue() ? this.options.digest!.compute() : '',
      closedStep: push.closedStep ?? null,
      marks: push.marks ?? [],
    };
    const waits: Promise<void>[] = [];
    for (const link of this.links.values()) {
      if (link.state === 'joining') continue;
      link.send(request);
      if (link.state === 'waited') waits.push(link.appliedAt(seq));
    }
    return Promise.all(waits).then(() => undefined);
  }

  /** Whether this push carries the shard's digest (computed right after it was applied). */
  private digestDue(): boolean {
    const digest = this.options.digest;
    if (!digest || digest.everyMs <= 0 || this.links.size === 0) return false;
    const now = performance.now();
    if (now - this.lastDigestMs < digest.everyMs) return false;
    this.lastDigestMs = now;
    return true;
  }

  /** Resolves once every waited replica applied everything applied so far (a duplicate's reply). */
  settled(): Promise<void> {
    const seq = this.options.appliedSeq();
    return Promise.all(
      [...this.links.values()].filter((l) => l.state === 'waited').map((l) => l.appliedAt(seq)),
    ).then(() => undefined);
  }

  /** Replicas, for status and metrics. */
  describe(): { member: string; state: LinkState; acked: number; inSync: boolean }[] {
    return [...this.links.values()].map((l) => ({
      member: l.replica.member,
      state: l.state,
      acked: l.acked,
      inSync: l.inSync,
    }));
  }

  close(): void {
    clearInterval(this.lagTimer);
    for (const link of this.links.values()) link.close();
    this.links.clear();
  }

  /** A waited replica that holds every push before it was waited for is in sync: tell it. */
  checkInSync(link: ReplicaLink): void {
    if (link.inSync || link.state !== 'waited' || link.acked < link.waitFrom - 1) return;
    link.inSync = true;
    this.options.logger.info('a replica is in sync', {
      member: link.replica.member,
      seq: link.acked,
    });
    // A notice: a forward of a push it applied already changes nothing but says it is in sync.
    link.send({
      index: this.options.index,
      primaryEpoch: this.options.epoch,
      seq: link.acked,
      trainerId: 0,
      step: 0,
      grads: [],
      sparse: [],
      evictions: [],
    });
  }

  private linkOf(member: string): ReplicaLink {
    for (const link of this.links.values()) if (link.replica.member === member) return link;
    throw new PserverError(
      'PSERVER_NOT_REPLICA',
      `member ${member} is not a replica of shard ${this.options.index} at epoch ${this.options.epoch}`,
    );
  }
}
