import type http2 from 'node:http2';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { TLSSocket } from 'node:tls';
import { Metadata, status } from '@grpc/grpc-js';
import type { Logger } from '@pserver/logging';
import type { CallContext } from '../call-context';
import type { CallMetrics } from '../call-metrics';
import { metadataKeys } from '../metadata-keys';
import type { AuthContext } from '../security/authenticator';
import { toStatus, type StatusObject } from '../status-mapping';
import { FramingError, MessageFramer, type MessageSink } from './message-framer';

/** What every direct call of a server shares. */
export interface DirectCallSettings {
  maxReceiveMessageBytes: number;
  maxSendMessageBytes: number;
  metrics?: CallMetrics;
  logger: Logger;
}

/**
 * The headers of a reply. No `grpc-encoding` (the reply is not compressed, which its absence
 * says) and no `grpc-accept-encoding` (a client that wants to compress its calls to this server
 * may, and they are served by grpc-js, which decompresses them).
 */
const replyHeaders = { ':status': 200, 'content-type': 'application/grpc+proto' } as const;

/** Parts of a reply up to this size are copied together with its prefix into one write. */
const coalescedBytes = 16 * 1024;

const okTrailers = { 'grpc-status': '0', 'grpc-message': 'OK' } as const;

const maxTimerMs = 2 ** 31 - 1;

/** gRPC's timeout header: up to 8 digits and a unit (grpc-js accepts the same). */
const timeoutPattern = /(\d{1,8})\s*([HMSmun])/;
const timeoutUnitsMs: Record<string, number> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000001,
};

/**
 * One gRPC call served straight on its HTTP/2 stream (see `direct-routes.ts`): the gRPC wire
 * protocol as grpc-js speaks it — deadline, cancellation, length-prefixed messages, the status in
 * trailers — without grpc-js's per-call objects and message copies. It is the call's
 * `CallContext` too; the signal, the peer and the logger are made only when asked for, since a
 * small push asks for none of them.
 *
 * Every call is answered exactly once, with `respond` or `fail`; a call the client abandoned is
 * counted as answered all the same, as the grpc-js interceptor counts it.
 */
export class DirectCall implements CallContext {
  readonly deadline: number = Number.POSITIVE_INFINITY;
  private readonly startedNs = process.hrtime.bigint();
  private controller: AbortController | undefined;
  private aborted = false;
  private abortReason: Error | undefined;
  private childLogger: Logger | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** The status is decided (sent, or dropped because the stream is gone). */
  private answered = false;
  /** The stream closed: the client reset it, or the reply was sent. */
  private closed = false;
  /** Run when the call ends without a reply (see `onAborted`). */
  private abortListeners: (() => void)[] | undefined;

  constructor(
    private readonly stream: ServerHttp2Stream,
    private readonly headers: IncomingHttpHeaders,
    /** The method's name, as metrics and logs know it (e.g. "SendGrads"). */
    readonly method: string,
    private readonly settings: DirectCallSettings,
  ) {
    // An error on the stream is always followed by 'close', which is what the call acts on.
    stream.on('error', () => undefined);
    stream.once('close', () => {
      this.closed = true;
      clearTimeout(this.deadlineTimer);
      if (!this.answered) this.abort(`${method}: cancelled by the client or its deadline`);
    });
    const timeout = headers['grpc-timeout'];
    if (timeout !== undefined) {
      const match = timeoutPattern.exec(String(timeout));
      if (!match) {
        this.failWith({
          code: status.INTERNAL,
          details: `Invalid grpc-timeout value "${String(timeout)}"`,
          metadata: new Metadata(),
        });
        return;
      }
      const timeoutMs = Math.trunc(Number(match[1]) * timeoutUnitsMs[match[2]!]!);
      this.deadline = Date.now() + timeoutMs;
      // Timers take at most 2^31 − 1 ms (24.8 days); a longer one would fire at once.
      this.deadlineTimer = setTimeout(() => this.expire(), Math.min(timeoutMs, maxTimerMs));
    }
  }

  /** Aborted when the client cancels, the deadline passes, or the call failed. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  get peer(): string {
    const socket = this.stream.session?.socket;
    if (!socket?.remoteAddress) return 'unknown';
    return socket.remotePort
      ? `${socket.remoteAddress}:${socket.remotePort}`
      : socket.remoteAddress;
  }

  get logger(): Logger {
    return (this.childLogger ??= this.settings.logger.child({ method: this.method }));
  }

  /** Whether the call is answered (or abandoned): nothing more will be sent on it. */
  get done(): boolean {
    return this.answered;
  }

  /** Whether nothing can be sent on the stream any more (reset by the client, or closed). */
  private get gone(): boolean {
    return this.closed || this.stream.closed || this.stream.destroyed;
  }

  /** The call's headers as grpc-js metadata, and what TLS verified of the caller. */
  credentials(): { metadata: Metadata; auth: AuthContext } {
    return { metadata: Metadata.fromHttp2Headers(this.headers), auth: authContextOf(this.stream) };
  }

  /**
   * Reads the one request message of a unary call into `sink`; `then` runs once the client
   * half-closed after it. No message, or a second one, is answered as grpc-js answers them.
   */
  readUnary(sink: MessageSink, then: () => void): void {
    let complete = 0;
    this.read(
      {
        // A second message is refused once it is whole, as grpc-js does; until then (and if it
        // never is) its bytes go nowhere.
        begin: (length) => complete === 0 && sink.begin(length),
        bytes: (piece) => complete === 0 && sink.bytes(piece),
        end: () => {
          if (++complete === 1) return sink.end();
          throw new FramingError(
            status.UNIMPLEMENTED,
            `Received a second request message for server streaming method ${this.path}`,
          );
        },
      },
      () => {
        if (complete === 1) return then();
        this.fail(
          new FramingError(
            status.UNIMPLEMENTED,
            `Received no request message for server streaming method ${this.path}`,
          ),
        );
      },
    );
  }

  /** Reads every request message into `sink`, in order; `then` runs at the half-close. */
  readStream(sink: MessageSink, then: () => void): void {
    this.read(sink, then);
  }

  /**
   * Runs `listener` once if the call ends without a reply: failed (by the service, its deadline,
   * bytes that break the framing) or broken off by the client. Like `signal`, without making one.
   */
  onAborted(listener: () => void): void {
    if (this.aborted) listener();
    else (this.abortListeners ??= []).push(listener);
  }

  /** Stops reading (the messages read so far wait to be used); `resume` goes on. */
  pause(): void {
    this.stream.pause();
  }

  resume(): void {
    this.stream.resume();
  }

  /** Counts payload bytes of a message received or sent (tensor contents). */
  payload(direction: 'in' | 'out', bytes: number): void {
    this.settings.metrics?.bytes(this.method, direction, bytes);
  }

  /**
   * Answers with one reply message made of `parts` (its encoded bytes, in order), then OK.
   * `written` runs once the parts have left for the socket, or were never handed to the stream:
   * buffers among them can be used again. With an error, the stream broke while writing and the
   * session may still hold them: they must not be.
   */
  respond(parts: readonly Uint8Array[], written?: (error?: Error | null) => void): void {
    if (this.answered) return written?.();
    let length = 0;
    for (const part of parts) length += part.byteLength;
    if (length > this.settings.maxSendMessageBytes) {
      written?.();
      return this.failWith({
        code: status.RESOURCE_EXHAUSTED,
        details: `Sent message larger than max (${length} vs. ${this.settings.maxSendMessageBytes})`,
        metadata: new Metadata(),
      });
    }
    this.settle(status.OK, '');
    if (this.gone) return written?.();
    const stream = this.stream;
    if (!this.startReply(replyHeaders, { waitForTrailers: true })) return written?.();
    stream.once('wantTrailers', () => stream.sendTrailers(okTrailers));
    // The 5-byte prefix and the small parts that follow it leave in one write: each write to an
    // HTTP/2 stream costs about as much as copying a few kilobytes.
    let small = 0;
    let head = 5;
    while (small < parts.length && head + parts[small]!.byteLength <= coalescedBytes)
      head += parts[small++]!.byteLength;
    const first = Buffer.allocUnsafe(head);
    first[0] = 0;
    first.writeUInt32BE(length, 1);
    for (let i = 0, at = 5; i < small; at += parts[i]!.byteLength, i++) first.set(parts[i]!, at);
    if (small === parts.length) return void stream.end(first, written);
    stream.write(first);
    for (let i = small; i < parts.length - 1; i++) stream.write(parts[i]!);
    stream.end(parts[parts.length - 1]!, written);
  }

  /**
   * Answers with the status of `err`: a domain error through the status table, a framing error
   * with its own code; anything else is INTERNAL with a generic message and logged.
   */
  fail(err: unknown): void {
    if (this.answered) return;
    if (err instanceof FramingError)
      return this.failWith({ code: err.code, details: err.message, metadata: new Metadata() });
    const answer = toStatus(err);
    if (!answer.expected && !this.closed) this.logger.error('call failed unexpectedly', { err });
    this.failWith(answer);
  }

  /** Answers with `answer` (a trailers-only reply). */
  failWith(answer: StatusObject): void {
    if (this.answered) return;
    const error = String(answer.metadata.get(metadataKeys.errorCode)[0] ?? '');
    this.settle(answer.code, error);
    // Aborted for the service's sake: whatever still runs for this call may stop.
    this.abort(`${this.method}: answered ${status[answer.code]}`);
    if (this.gone) return;
    this.startReply(
      {
        ':status': 200,
        'content-type': 'application/grpc+proto',
        'grpc-status': String(answer.code),
        'grpc-message': encodeURI(answer.details),
        ...answer.metadata.toHttp2Headers(),
      },
      { endStream: true },
    );
    // The client may still be sending; its bytes are read and dropped.
    this.stream.resume();
  }

  private get path(): string {
    return String(this.headers[':path']);
  }

  private read(sink: MessageSink, halfClosed: () => void): void {
    const framer = new MessageFramer(sink, this.settings.maxReceiveMessageBytes);
    this.stream.on('data', (chunk: Buffer) => {
      if (this.answered) return;
      try {
        framer.write(chunk);
      } catch (err) {
        this.fail(err);
      }
    });
    this.stream.once('end', () => {
      // A client that resets the stream also ends it (Node ends a reset stream that was still
      // readable, and says it was reset only after): the request is then handled as if it had
      // been half-closed, as grpc-js does, and the reply, if any, is dropped.
      if (!this.answered && !this.gone) halfClosed();
    });
  }

  private expire(): void {
    this.abort(`${this.method}: cancelled by the client or its deadline`);
    this.failWith({
      code: status.DEADLINE_EXCEEDED,
      details: 'Deadline exceeded',
      metadata: new Metadata(),
    });
  }

  /**
   * Sends the reply's headers; false if the stream turned out to be gone. A client's reset is
   * seen by Node only after the request's end, so a stream that looked open may refuse them: the
   * call is then over, and nothing a client does may throw out of here.
   */
  private startReply(
    headers: http2.OutgoingHttpHeaders,
    options: http2.ServerStreamResponseOptions,
  ): boolean {
    try {
      this.stream.respond(headers, options);
      return true;
    } catch {
      this.closed = true;
      return false;
    }
  }

  /** Ends the call without a reply: the signal aborts, the `onAborted` listeners run. */
  private abort(reason: string): void {
    if (this.aborted) return;
    this.aborted = true;
    this.abortReason = new Error(reason);
    this.controller?.abort(this.abortReason);
    for (const listener of this.abortListeners ?? []) listener();
  }

  private settle(code: status, error: string): void {
    this.answered = true;
    clearTimeout(this.deadlineTimer);
    this.settings.metrics?.answered(this.method, code, error, this.startedNs);
  }
}

/**
 * What TLS verified of a call's peer, as grpc-js reports it (a certificate only when verified
 * against the client CA). Read once per connection: a certificate does not change within one,
 * and Node builds a new object of it (its fields parsed) each time it is asked.
 */
function authContextOf(stream: ServerHttp2Stream): AuthContext {
  const session = stream.session;
  if (!session) return {};
  let auth = authContexts.get(session);
  if (!auth) {
    const socket = session.socket;
    const certificate =
      socket instanceof TLSSocket && socket.authorized ? socket.getPeerCertificate() : undefined;
    auth = certificate
      ? {
          transportSecurityType: 'ssl',
          sslPeerCertificate: certificate.raw ? certificate : undefined,
        }
      : {};
    authContexts.set(session, auth);
  }
  return auth;
}

const authContexts = new WeakMap<object, AuthContext>();
