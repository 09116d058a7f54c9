import type { Logger } from '@pserver/logging';
import type { ForwardRequest } from '@pserver/proto';
import { ForwardBatches, type OpenForwardStream } from '../replication/forward-batches';
import { PserverError } from '../shard/errors';
import type { MoveProgress, MoveTarget } from '../shard/share-parts';
import type { PushRecord } from '../shard/push-record';

/** A receiver of a live move, as `reshape/receiver/<index>` names it. */
export interface MoveReceiver {
  member: string;
  address: string;
  to: MoveTarget;
}

export interface MoveLinksOptions {
  /** The old shard's index and its primary's epoch: every forward names them. */
  index: number;
  epoch: number;
  /** The shard's last applied sequence number, read synchronously. */
  appliedSeq: () => number;
  forward: OpenForwardStream;
  /** The part of an applied push that `to` takes (`sliceRecord` on the served shard). */
  slice: (record: PushRecord, to: MoveTarget) => PushRecord;
  logger: Logger;
  /** Forwards a receiver may leave unapplied before it is given up (its move fails). */
  maxBehind?: number;
}

/** The sender's side of one receiver. */
class MoveLink {
  /** The receiver's last applied sequence number, as it acknowledged. */
  acked: number;
  /** The receiver loaded its copy. */
  loaded = false;
  /** The size of its copy (0 until written) and the bytes of it sent. */
  copyBytes = 0;
  sentBytes = 0;
  private readonly waiters: { seq: number; resolve: () => void }[] = [];
  /** The forwards not acknowledged yet, oldest first, with when each was sent. */
  private readonly unacked: { seq: number; at: number }[] = [];
  readonly closed = new AbortController();
  readonly forwards: ForwardBatches;

  constructor(
    readonly receiver: MoveReceiver,
    /** The sequence number its copy was taken at. */
    readonly from: number,
    options: MoveLinksOptions,
  ) {
    this.acked = from;
    this.forwards = new ForwardBatches({
      address: receiver.address,
      member: receiver.member,
      open: options.forward,
      onApplied: (seq) => this.acknowledged(seq),
      signal: this.closed.signal,
      logger: options.logger,
    });
  }

  /** Forwards sent and not acknowledged yet. */
  get unapplied(): number {
    return this.unacked.length;
  }

  appliedAt(seq: number): Promise<void> {
    if (this.acked >= seq || this.closed.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq, resolve }));
  }

  sent(seq: number): void {
    this.unacked.push({ seq, at: performance.now() });
  }

  /**
   * Whether it keeps up with the forwards: none left unapplied longer than `behindMs`, and, once
   * any was sent, one applied (a receiver that applies none is not keeping up, however recent).
   */
  keepsUp(behindMs: number): boolean {
    const oldest = this.unacked[0];
    return !oldest || (this.acked > this.from && performance.now() - oldest.at <= behindMs);
  }

  acknowledged(seq: number): void {
    if (seq <= this.acked) return;
    this.acked = seq;
    let applied = 0;
    while (applied < this.unacked.length && this.unacked[applied]!.seq <= seq) applied++;
    this.unacked.splice(0, applied);
    for (let i = this.waiters.length - 1; i >= 0; i--)
      if (this.waiters[i]!.seq <= seq) this.waiters.splice(i, 1)[0]!.resolve();
  }

  close(): void {
    this.closed.abort();
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }
}

/**
 * The old shard's side of a live move (a change of the shard count while the job runs): the
 * receivers that copied this shard (`startMoving`, in the tick the copy is taken) and, from the
 * copy's sequence number on, each push the shard applies, sliced to what the receiver takes and
 * forwarded as to a replica — but never waited for: a push is acknowledged to its trainer without
 * them, so a slow or dead receiver slows no trainer. At the hand-over the shard stops taking
 * pushes and waits, bounded, until every receiver applied its last (`caughtUp`); a receiver that
 * has not, or fell `maxBehind` forwards behind, is given up, and its move with it (the new shard
 * is then restored from checkpoints, as when nothing moves live).
 */
export class MoveLinks {
  private readonly links = new Map<string, MoveLink>();

  constructor(private readonly options: MoveLinksOptions) {}

  /**
   * A receiver begins from the copy taken at the current sequence number; one that copies again
   * (its first copy failed) starts over. Returns that sequence number.
   */
  startMoving(receiver: MoveReceiver): number {
    const seq = this.options.appliedSeq();
    this.links.get(receiver.member)?.close();
    this.links.set(receiver.member, new MoveLink(receiver, seq, this.options));
    this.options.logger.info('a receiver of a live move copies the shard', {
      member: receiver.member,
      to: receiver.to,
      seq,
    });
    return seq;
  }

  /** The receiver `member` loaded its copy. PSERVER_NOT_REPLICA when it is not copying. */
  loaded(member: string): void {
    const link = this.links.get(member);
    if (!link)
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `member ${member} receives no slices of shard ${this.options.index}`,
      );
    link.loaded = true;
  }

  /** `sentBytes` of the receiver `member`'s copy of `copyBytes` are sent. */
  sent(member: string, sentBytes: number, copyBytes: number): void {
    const link = this.links.get(member);
    if (!link) return;
    link.sentBytes = sentBytes;
    link.copyBytes = copyBytes;
  }

  /**
   * Those of `members` not ready for the hand-back: each one ready loaded its copy and keeps up
   * with the pushes forwarded since (`MoveLink.keepsUp`: once pushes stop, the wait for the last
   * is then short).
   */
  unready(members: readonly string[], behindMs: number): string[] {
    return members.filter((member) => {
      const link = this.links.get(member);
      return (
        link === undefined || !link.loaded || link.closed.signal.aborted || !link.keepsUp(behindMs)
      );
    });
  }

  /** Forwards push `seq` (just applied), sliced, to every receiver; waits for none. */
  replicate(seq: number, push: PushRecord): void {
    const sliced = new Map<string, PushRecord>();
    for (const link of this.links.values()) {
      const { to } = link.receiver;
      const key = `${to.index}/${to.shardCount}`;
      let record = sliced.get(key);
      if (!record) sliced.set(key, (record = this.options.slice(push, to)));
      this.send(link, {
        index: this.options.index,
        primaryEpoch: this.options.epoch,
        seq,
        trainerId: record.trainerId,
        step: record.step,
        grads: record.grads,
        sparse: record.sparse,
        evictions: record.evictions,
        closedStep: record.closedStep ?? null,
        marks: record.marks ?? [],
        moveTo: to,
      });
    }
  }

  /**
   * Resolves once every receiver applied every push applied so far, or `timeoutMs` passed: the
   * members that did, and those given up.
   */
  async caughtUp(timeoutMs: number): Promise<{ moved: string[]; behind: string[] }> {
    const seq = this.options.appliedSeq();
    const links = [...this.links.values()];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(links.map((link) => link.appliedAt(seq))),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
    const moved = links.filter((link) => !link.closed.signal.aborted && link.acked >= seq);
    const behind = links.filter((link) => !moved.includes(link));
    for (const link of behind)
      this.giveUp(link, `it had not applied push ${seq} after ${timeoutMs} ms`);
    return {
      moved: moved.map((l) => l.receiver.member),
      behind: behind.map((l) => l.receiver.member),
    };
  }

  /** Receivers, for status and logs. */
  describe(): MoveProgress[] {
    return [...this.links.values()].map((link) => ({
      member: link.receiver.member,
      to: link.receiver.to,
      copyBytes: link.copyBytes,
      sentBytes: link.sentBytes,
      loaded: link.loaded,
      acked: link.acked,
    }));
  }

  close(): void {
    for (const link of this.links.values()) link.close();
    this.links.clear();
  }

  /** Sends one forward, in a batch with those queued meanwhile, until the receiver applied it. */
  private send(link: MoveLink, request: ForwardRequest): void {
    const { maxBehind = 100_000 } = this.options;
    if (link.unapplied >= maxBehind) {
      this.giveUp(link, `${link.unapplied} forwards are unapplied`);
      return;
    }
    link.sent(Number(request.seq));
    link.forwards.push(request);
  }

  private giveUp(link: MoveLink, why: string): void {
    if (this.links.get(link.receiver.member) === link) this.links.delete(link.receiver.member);
    link.close();
    this.options.logger.warn(
      'gave up a receiver of a live move: its slices are restored from checkpoints instead',
      {
        member: link.receiver.member,
        to: link.receiver.to,
        acked: link.acked,
        why,
      },
    );
  }
}
