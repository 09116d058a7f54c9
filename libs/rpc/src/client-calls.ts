import {
  Metadata,
  type CallOptions,
  type ClientUnaryCall,
  type ClientWritableStream,
  type ServiceError,
} from '@grpc/grpc-js';
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
    const call = method(
      request,
      new Metadata(),
      { deadline: Date.now() + settings.timeoutMs },
      (err, response) => {
        settings.signal?.removeEventListener('abort', cancel);
        if (err) reject(fromServiceError(err));
        else resolve(response as Res);
      },
    );
    const cancel = (): void => call.cancel();
    if (settings.signal?.aborted) cancel();
    else settings.signal?.addEventListener('abort', cancel, { once: true });
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
    const stream = method(
      new Metadata(),
      { deadline: Date.now() + settings.timeoutMs },
      (err, response) => {
        settings.signal?.removeEventListener('abort', cancel);
        if (err) reject(fromServiceError(err));
        else resolve(response as Res);
      },
    );
    const cancel = (): void => stream.cancel();
    if (settings.signal?.aborted) cancel();
    else settings.signal?.addEventListener('abort', cancel, { once: true });
    void (async () => {
      try {
        for await (const message of messages) {
          if (!stream.write(message)) await new Promise((drained) => stream.once('drain', drained));
        }
        stream.end();
      } catch {
        // The message source failed: break the stream off, so the server applies nothing.
        stream.cancel();
      }
    })();
  });
}
