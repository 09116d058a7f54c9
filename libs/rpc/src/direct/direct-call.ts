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
  private childLogger: Logger | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** The status is decided (sent, or dropped because the stream is gone). */
  private answered = false;
  /** The stream closed: the client reset it, or the reply was sent. */
  private closed = false;
  private closeListeners: (() => void)[] | undefined;

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
      if (!this.answered)
        this.controller?.abort(new Error(`${method}: cancelled by the client or its deadline`));
      for (const listener of this.closeListeners ?? []) listener();
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
      this.deadlineTimer = setTimeout(() => this.expire(), timeoutMs);
    }
  }

  /** Aborted when the client cancels or the deadline passes. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.closed && !this.answered)
        this.controller.abort(new Error(`${this.method}: cancelled by the client or its deadline`));
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

  /** The call's headers as grpc-js metadata, and what TLS verified of the caller. */
  credentials(): { metadata: Metadata; auth: AuthContext } {
    const socket = this.stream.session?.socket;
    const auth: AuthContext =
      socket instanceof TLSSocket && socket.authorized
        ? { transportSecurityType: 'ssl', sslPeerCertificate: verifiedCertificate(socket) }
        : {};
    return { metadata: Metadata.fromHttp2Headers(this.headers), auth };
  }

  /**
   * Reads the one request message of a unary call into `sink`; `then` runs once the client
   * half-closed after it. No message, or a second one, is answered as grpc-js answers them.
   */
  readUnary(sink: MessageSink, then: () => void): void {
    let begun = 0;
    let complete = 0;
    this.read(
      {
        begin: (length) => {
          if (++begun > 1)
            throw new FramingError(
              status.UNIMPLEMENTED,
              `Received a second request message for server streaming method ${this.path}`,
            );
          sink.begin(length);
        },
        bytes: (piece) => sink.bytes(piece),
        end: () => {
          complete++;
          sink.end();
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

  /** Runs `listener` once the call's stream is gone (answered and sent, or reset). */
  onClose(listener: () => void): void {
    if (this.closed) listener();
    else (this.closeListeners ??= []).push(listener);
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
   * `written` runs once the parts have left for the socket (or the stream is gone and never
   * will send them), so buffers among them can be used again.
   */
  respond(parts: readonly Uint8Array[], written?: () => void): void {
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
    if (this.closed || this.stream.destroyed) return written?.();
    const stream = this.stream;
    stream.respond(replyHeaders, { waitForTrailers: true });
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
    this.controller?.abort(new Error(`${this.method}: answered ${status[answer.code]}`));
    if (this.closed || this.stream.destroyed) return;
    this.stream.respond(
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
      if (!this.answered) halfClosed();
    });
  }

  private expire(): void {
    this.controller?.abort(new Error(`${this.method}: cancelled by the client or its deadline`));
    this.failWith({
      code: status.DEADLINE_EXCEEDED,
      details: 'Deadline exceeded',
      metadata: new Metadata(),
    });
  }

  private settle(code: status, error: string): void {
    this.answered = true;
    clearTimeout(this.deadlineTimer);
    this.settings.metrics?.answered(this.method, code, error, this.startedNs);
  }
}

/** The peer's certificate, as grpc-js reports it: only one TLS verified against the client CA. */
function verifiedCertificate(socket: TLSSocket): AuthContext['sslPeerCertificate'] {
  const certificate = socket.getPeerCertificate();
  return certificate.raw ? certificate : undefined;
}
