import {
  Metadata,
  type CallOptions,
  type ClientUnaryCall,
  type ClientWritableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { onAbort } from './abort-signals';
import { fromServiceError } from './status-mapping';

export interface CallSettings {
  /** Milliseconds from now until the call's deadline. */
  timeoutMs: number;
  /** Cancels the call. */
  signal?: AbortSignal;
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: CallOptions,
  callback: (err: ServiceError | null, response?: Res) => void,
) => ClientUnaryCall;

type ClientStreamMethod<Req, Res> = (
  metadata: Metadata,
  options: CallOptions,
  callback: (err: ServiceError | null, response?: Res) => void,
) => ClientWritableStream<Req>;

/**
 * A unary call as a promise, with a deadline and cancellation; a failure rejects with `RpcError`
 * (status, domain code, facts from the trailers).
 */
export function callUnary<Req, Res>(
  method: UnaryMethod<Req, Res>,
  request: Req,
  settings: CallSettings,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    let unlink = (): void => undefined;
    const call = method(
      request,
      new Metadata(),
      { deadline: Date.now() + settings.timeoutMs },
      (err, response) => {
        unlink();
        if (err) reject(fromServiceError(err));
        else resolve(response as Res);
      },
    );
    unlink = onAbort(settings.signal, () => call.cancel());
  });
}

/**
 * A client-streaming call as a promise: writes every message, waiting for the stream to drain
 * when its buffer is full, then half-closes and resolves with the reply.
 */
export function callClientStream<Req, Res>(
  method: ClientStreamMethod<Req, Res>,
  messages: Iterable<Req> | AsyncIterable<Req>,
  settings: CallSettings,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    let unlink = (): void => undefined;
    let settled = false;
    // Wakes a writer waiting for 'drain': a call that ended (cancelled, deadline, an early answer)
    // never drains, and the writer would hold the message source forever.
    let wakeWriter = (): void => undefined;
    const stream = method(
      new Metadata(),
      { deadline: Date.now() + settings.timeoutMs },
      (err, response) => {
        settled = true;
        unlink();
        wakeWriter();
        if (err) reject(fromServiceError(err));
        else resolve(response as Res);
      },
    );
    unlink = onAbort(settings.signal, () => stream.cancel());
    const drained = (): Promise<void> =>
      new Promise((resolve) => {
        const wake = (): void => {
          stream.off('drain', wake);
          wakeWriter = () => undefined;
          resolve();
        };
        wakeWriter = wake;
        stream.once('drain', wake);
      });
    void (async () => {
      try {
        for await (const message of messages) {
          if (settled) return;
          if (!stream.write(message)) await drained();
        }
        if (!settled) stream.end();
      } catch {
        // The message source failed: break the stream off, so the server applies nothing.
        stream.cancel();
      }
    })();
  });
}
