import type { Logger } from '@pserver/logging';
import type { ForwardRequest } from '@pserver/proto';
import { backoffDelayMs, backoffPolicies } from '@pserver/rpc';

/** One ForwardStream to a replica or receiver, as the primary holds it. */
export interface ForwardStream {
  /** Sends one batch; it is answered after those sent before it. */
  write(forwards: ForwardRequest[]): void;
  /** Ends the stream; no event follows. */
  cancel(): void;
}

/** What a ForwardStream tells: each batch's answer, in order, and its end. */
export interface ForwardStreamEvents {
  /** The next batch is applied: the destination's last applied sequence number. */
  answered(appliedSeq: number): void;
  /** The stream ended (a refusal, a broken connection): batches unanswered were not. */
  ended(error?: unknown): void;
}

/** Opens a ForwardStream to `address` (gRPC in the node, a fake in unit tests). */
export type OpenForwardStream = (address: string, events: ForwardStreamEvents) => ForwardStream;

export interface ForwardBatchesOptions {
  address: string;
  open: OpenForwardStream;
  /** The replica's (or receiver's) last applied sequence number, each time it says it. */
  onApplied: (seq: number) => void;
  /** Ends the sending for good. */
  signal: AbortSignal;
  logger: Logger;
  /** For the logs: who the forwards go to. */
  member: string;
  /** Batches unanswered at once (default 4): more forwards wait and go in one batch after. */
  maxInFlight?: number;
  /** A batch closes once its bytes would pass this (a larger forward goes alone; default 4 MiB). */
  maxBatchBytes?: number;
  /** …or once it holds this many forwards (default 1024: a backlog of tiny ones stays small). */
  maxBatchForwards?: number;
  /** A batch unanswered this long (default 10 s) means a stuck stream: it is opened again. */
  answerTimeoutMs?: number;
}

/** What a forward's payload weighs (its tensors' and rows' bytes): enough to size a batch. */
export function forwardBytes(request: ForwardRequest): number {
  let bytes = 0;
  for (const grad of request.grads ?? []) bytes += byteLength(grad.content);
  for (const sparse of request.sparse ?? [])
    bytes += byteLength(sparse.ids) + byteLength(sparse.grads) + byteLength(sparse.counts);
  for (const evicted of request.evictions ?? []) bytes += byteLength(evicted.ids);
  return bytes;
}

function byteLength(data: Uint8Array | string | undefined): number {
  return typeof data === 'string' ? data.length : (data?.byteLength ?? 0);
}

/**
 * One destination's forwards, in sequence order, on one long-lived stream: every forward queued
 * while `maxInFlight` batches are unanswered goes into the next batch, so a replica costs one
 * stream message per batch rather than a call per push, and a lone push goes at once. When the
 * stream ends or stops answering, another is opened (after a backoff) and the unanswered batches
 * go first on it: the destination answers forwards it applied already at once, so sending one
 * twice changes nothing. Only `signal` ends the sending.
 */
export class ForwardBatches {
  private queued: ForwardRequest[] = [];
  /** Batches written on the current stream and not answered yet, oldest first. */
  private unanswered: { forwards: ForwardRequest[]; sentAtMs: number }[] = [];
  private stream: ForwardStream | undefined;
  /** Streams that ended since the last answer (the backoff before the next). */
  private failures = 0;
  private reopenTimer: NodeJS.Timeout | undefined;
  private answerTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ForwardBatchesOptions) {
    options.signal.addEventListener('abort', () => this.stop(), { once: true });
  }

  /** Queues one forward (sequence numbers ascending) and sends it as soon as a batch may go. */
  push(request: ForwardRequest): void {
    if (this.options.signal.aborted) return;
    this.queued.push(request);
    this.pump();
  }

  private pump(): void {
    const { maxInFlight = 4 } = this.options;
    if (this.options.signal.aborted || this.reopenTimer) return;
    if (this.queued.length > 0) {
      const stream = (this.stream ??= this.open());
      while (this.unanswered.length < maxInFlight && this.queued.length > 0) {
        const forwards = this.nextBatch();
        this.unanswered.push({ forwards, sentAtMs: performance.now() });
        stream.write(forwards);
      }
    }
    this.watchAnswers();
  }

  private nextBatch(): ForwardRequest[] {
    const { maxBatchBytes = 4 << 20, maxBatchForwards = 1024 } = this.options;
    const most = Math.min(this.queued.length, maxBatchForwards);
    let count = 1;
    let bytes = forwardBytes(this.queued[0]!);
    for (; count < most; count++) {
      const next = forwardBytes(this.queued[count]!);
      if (bytes + next > maxBatchBytes) break;
      bytes += next;
    }
    return this.queued.splice(0, count);
  }

  private open(): ForwardStream {
    const stream: ForwardStream = this.options.open(this.options.address, {
      answered: (seq) => {
        if (this.stream !== stream) return;
        this.unanswered.shift();
        this.failures = 0;
        this.options.onApplied(seq);
        this.pump();
      },
      ended: (error) => {
        if (this.stream === stream) this.reopen(error);
      },
    });
    return stream;
  }

  /** The stream is gone: the unanswered batches go again, first, on the next one. */
  private reopen(error: unknown): void {
    const { logger, member, address } = this.options;
    this.stream?.cancel();
    this.stream = undefined;
    clearTimeout(this.answerTimer);
    this.queued = [...this.unanswered.flatMap((batch) => batch.forwards), ...this.queued];
    this.unanswered = [];
    if (this.options.signal.aborted || this.queued.length === 0) return;
    const delayMs = backoffDelayMs(backoffPolicies.replicaForward, ++this.failures);
    logger.debug('the forward stream ended; sending the unanswered forwards again', {
      member,
      address,
      forwards: this.queued.length,
      retryInMs: delayMs,
      err: error,
    });
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined;
      this.pump();
    }, delayMs);
  }

  /** A stream whose oldest batch has waited past the timeout is stuck: it is opened again. */
  private watchAnswers(): void {
    clearTimeout(this.answerTimer);
    const oldest = this.unanswered[0];
    if (!oldest) return;
    const { answerTimeoutMs = 10_000 } = this.options;
    const dueInMs = oldest.sentAtMs + answerTimeoutMs - performance.now();
    this.answerTimer = setTimeout(
      () => this.reopen(new Error(`no answer in ${answerTimeoutMs} ms`)),
      Math.max(0, dueInMs),
    );
  }

  private stop(): void {
    clearTimeout(this.reopenTimer);
    clearTimeout(this.answerTimer);
    this.stream?.cancel();
    this.stream = undefined;
    this.queued = [];
    this.unanswered = [];
  }
}
