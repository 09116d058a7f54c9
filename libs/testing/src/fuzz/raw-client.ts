import http2 from 'node:http2';
import {
  Client,
  credentials,
  Metadata,
  status,
  type ClientWritableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { metadataKeys } from '@pserver/rpc';

/** What a server answered to one call, as bytes and status. */
export interface RawAnswer {
  /** The gRPC status code (0 = OK). */
  status: status;
  details: string;
  /** The `pserver-error-code` trailer, when the server sent one. */
  errorCode: string | undefined;
  /** The response message's bytes, on OK. */
  body: Buffer | undefined;
  /** How the call ended on the client's side: sent whole, or broken off by the client. */
  ending: 'completed' | 'broken-off';
}

const identity = (bytes: Buffer): Buffer => bytes;

/**
 * A gRPC client that sends bytes as they are (an identity serializer), so the server's protobuf
 * parser sees exactly what a fuzzer made, and reads answers as bytes. Its own limits are lifted
 * (64 MiB both ways): sizes are the server's to refuse.
 */
export class RawGrpcClient {
  private readonly client: Client;

  constructor(
    readonly address: string,
    private readonly timeoutMs = 20_000,
  ) {
    this.client = new Client(address, credentials.createInsecure(), {
      'grpc.max_send_message_length': 64 * 1024 * 1024,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
    });
  }

  /** One unary call of `path` (`/pserver.v1.ParameterServer/SendGrads`) with `body` as the message. */
  unary(path: string, body: Buffer): Promise<RawAnswer> {
    return new Promise((resolve) => {
      this.client.makeUnaryRequest(
        path,
        identity,
        identity,
        body,
        new Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, response) => resolve(answerOf(err, response, 'completed')),
      );
    });
  }

  /**
   * One client-streaming call: writes `messages` in order, then half-closes. With `breakOff` the
   * client dies mid-stream instead: see `brokenOffStream`.
   */
  clientStream(path: string, messages: Buffer[], breakOff = false): Promise<RawAnswer> {
    if (breakOff) return brokenOffStream(this.address, path, messages);
    return new Promise((resolve) => {
      let answered = false;
      const stream: ClientWritableStream<Buffer> = this.client.makeClientStreamRequest(
        path,
        identity,
        identity,
        new Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, response) => {
          answered = true;
          resolve(answerOf(err, response, 'completed'));
        },
      );
      // The server may answer before every message is written (a refusal): stop writing then.
      const writable = (): Promise<unknown> =>
        new Promise((ready) => {
          stream.once('drain', ready);
          stream.once('status', ready);
        });
      void (async () => {
        for (const message of messages) {
          if (answered) return;
          if (!stream.write(message)) await writable();
        }
        stream.end();
      })();
    });
  }

  /**
   * One server-streaming call: reads messages until `maxMessages` have come or none came for
   * `quietMs`, then cancels the call (a watcher that has seen enough). The answer is the status
   * the call ended with: CANCELLED (`broken-off`) when the client ended it, with the messages read.
   */
  serverStream(
    path: string,
    body: Buffer,
    options: { maxMessages: number; quietMs: number },
  ): Promise<RawAnswer & { messages: Buffer[] }> {
    return new Promise((resolve) => {
      const messages: Buffer[] = [];
      let cancelled = false;
      const stream = this.client.makeServerStreamRequest(
        path,
        identity,
        identity,
        body,
        new Metadata(),
        { deadline: Date.now() + this.timeoutMs },
      );
      let timer = setTimeout(() => cancel(), options.quietMs);
      const cancel = (): void => {
        clearTimeout(timer);
        cancelled = true;
        stream.cancel();
      };
      stream.on('data', (message: Buffer) => {
        messages.push(message);
        clearTimeout(timer);
        if (messages.length >= options.maxMessages) cancel();
        else timer = setTimeout(() => cancel(), options.quietMs);
      });
      stream.on('error', (err: ServiceError) => {
        clearTimeout(timer);
        resolve({ ...answerOf(err, undefined, cancelled ? 'broken-off' : 'completed'), messages });
      });
      stream.on('end', () => {
        clearTimeout(timer);
        // The server ended the stream with OK: a watch never does that on its own.
        resolve({ ...answerOf(null, Buffer.alloc(0), 'completed'), messages });
      });
    });
  }

  close(): void {
    this.client.close();
  }
}

function answerOf(
  err: ServiceError | null,
  response: Buffer | undefined,
  ending: RawAnswer['ending'],
): RawAnswer {
  if (!err) return { status: status.OK, details: '', errorCode: undefined, body: response, ending };
  const code = err.metadata?.get(metadataKeys.errorCode)[0];
  return {
    status: err.code,
    details: err.details,
    errorCode: code === undefined ? undefined : code.toString(),
    body: undefined,
    ending,
  };
}

/**
 * A client-streaming call whose client dies mid-stream: on a connection of its own, the messages
 * are written (gRPC-framed) and flushed, then the connection is destroyed without a half-close.
 * grpc-js's `cancel()` cannot stand in for this: Node's HTTP/2 stream half-closes (END_STREAM)
 * before it resets (RST_STREAM), so a server may rightly take a cancelled stream for a complete
 * one, and a cancel right after the writes can leave the stream open on the wire until its
 * deadline. The answer is CANCELLED, as the dead client would have seen it.
 */
async function brokenOffStream(
  address: string,
  path: string,
  messages: Buffer[],
): Promise<RawAnswer> {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  try {
    const request = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    request.on('error', () => undefined);
    // The server may answer (a refusal) or close the stream before every message is written.
    let answered = false;
    const closed = new Promise<void>((done) => request.once('close', done));
    request.on('response', () => (answered = true));
    for (const message of messages) {
      if (answered) break;
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(message.length, 1);
      const written = new Promise<void>((done) =>
        request.write(Buffer.concat([prefix, message]), () => done()),
      );
      await Promise.race([written, closed]);
    }
    // Let the server read what was sent before the connection goes.
    await new Promise((settled) => setTimeout(settled, 1));
  } finally {
    session.destroy();
  }
  return {
    status: status.CANCELLED,
    details: 'the client died mid-stream',
    errorCode: undefined,
    body: undefined,
    ending: 'broken-off',
  };
}
