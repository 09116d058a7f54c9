import { status } from '@grpc/grpc-js';

/**
 * Receives a call's request messages as their bytes arrive, without reassembling them: a 4 MiB
 * gradient is read straight from the DATA frames into the place it is staged in, not first
 * concatenated into a message buffer of its own.
 */
export interface MessageSink {
  /** A message of `length` bytes begins (its 5-byte gRPC prefix is read). */
  begin(length: number): void;
  /**
   * The next bytes of the current message: a view of the chunk they came in. Node's HTTP/2 gives
   * every read a buffer of its own, so a sink may keep the view (`WholeMessage` does).
   */
  bytes(piece: Buffer): void;
  /** The current message is complete. */
  end(): void;
}

/** A stream's bytes that break the gRPC framing: answered with `code`, like grpc-js does. */
export class FramingError extends Error {
  override readonly name = 'FramingError';

  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Splits a request stream's DATA bytes into gRPC's length-prefixed messages (a flag byte, a
 * 4-byte big-endian length, the message) and hands each message's bytes to the sink piece by
 * piece. A message longer than `maxMessageBytes` is refused from its prefix, before any of it is
 * held, with the status grpc-js gives (RESOURCE_EXHAUSTED).
 */
export class MessageFramer {
  /** A prefix split between chunks, gathered (made the first time one is). */
  private prefix: Buffer | undefined;
  private prefixBytes = 0;
  /** Bytes of the current message still to come; -1 between messages. */
  private remaining = -1;

  constructor(
    private readonly sink: MessageSink,
    private readonly maxMessageBytes: number,
  ) {}

  /** Whether the bytes so far end where a message ends (a half-close here is clean). */
  get atBoundary(): boolean {
    return this.remaining < 0 && this.prefixBytes === 0;
  }

  /** Takes the next DATA bytes. Throws FramingError; whatever the sink throws passes through. */
  write(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      if (this.remaining < 0) {
        // A prefix whole in the chunk is read in place; one split between chunks is gathered.
        if (this.prefixBytes === 0 && chunk.length - pos >= 5) {
          this.startMessage(chunk.readUInt32BE(pos + 1));
          pos += 5;
          continue;
        }
        const n = Math.min(5 - this.prefixBytes, chunk.length - pos);
        this.prefix ??= Buffer.alloc(5);
        chunk.copy(this.prefix, this.prefixBytes, pos, pos + n);
        this.prefixBytes += n;
        pos += n;
        if (this.prefixBytes < 5) return;
        this.prefixBytes = 0;
        this.startMessage(this.prefix.readUInt32BE(1));
        continue;
      }
      const n = Math.min(this.remaining, chunk.length - pos);
      this.sink.bytes(pos === 0 && n === chunk.length ? chunk : chunk.subarray(pos, pos + n));
      this.remaining -= n;
      pos += n;
      if (this.remaining === 0) {
        this.remaining = -1;
        this.sink.end();
      }
    }
  }

  /**
   * The compressed flag is not read: calls that announce a compression are grpc-js's, and on a
   * call without one grpc-js reads a flagged message as it is (its encoding is identity).
   */
  private startMessage(length: number): void {
    if (length > this.maxMessageBytes) {
      throw new FramingError(
        status.RESOURCE_EXHAUSTED,
        `Received message larger than max (${length} vs ${this.maxMessageBytes})`,
      );
    }
    this.sink.begin(length);
    if (length > 0) {
      this.remaining = length;
      return;
    }
    this.sink.end();
  }
}

/**
 * A sink that keeps one message whole, for requests small enough to decode at once (a pull's
 * names). A message that arrived in one piece is kept as that view, not copied.
 */
export class WholeMessage implements MessageSink {
  private expected = 0;
  private buffer: Buffer | undefined;
  private filled = 0;
  private complete: Buffer | undefined;

  begin(length: number): void {
    this.expected = length;
    this.buffer = undefined;
    this.filled = 0;
    this.complete = length === 0 ? Buffer.alloc(0) : undefined;
  }

  bytes(piece: Buffer): void {
    if (this.filled === 0 && piece.length === this.expected) {
      this.complete = piece;
      this.filled = piece.length;
      return;
    }
    this.buffer ??= Buffer.allocUnsafe(this.expected);
    piece.copy(this.buffer, this.filled);
    this.filled += piece.length;
  }

  end(): void {
    this.complete ??= this.buffer;
  }

  /** The last complete message. */
  get message(): Buffer {
    if (!this.complete) throw new Error('WholeMessage: no complete message');
    return this.complete;
  }
}
