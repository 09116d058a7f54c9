import {
  type handleBidiStreamingCall,
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  type ServerWritableStream,
  type handleUnaryCall,
  type sendUnaryData,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerDuplexStream,
} from '@grpc/grpc-js';
import type { Logger } from '@pserver/logging';
import { onAbort } from './abort-signals';
import type { CallContext } from './call-context';
import { toStatus } from './status-mapping';
import { parsed } from './unparsable-request';

/** A service method: plain request in, plain response out, errors thrown as coded errors. */
export type UnaryMethod<Req, Res> = (request: Req, ctx: CallContext) => Res | Promise<Res>;
export type ClientStreamMethod<Req, Res> = (
  requests: AsyncIterable<Req>,
  ctx: CallContext,
) => Promise<Res>;

export type ServerStreamMethod<Req, Res> = (
  request: Req,
  ctx: CallContext,
  send: (message: Res) => Promise<void>,
) => Promise<void>;

type AnyCall =
  | ServerUnaryCall<unknown, unknown>
  | ServerReadableStream<unknown, unknown>
  | ServerWritableStream<unknown, unknown>
  | ServerDuplexStream<unknown, unknown>;

function contextOf(call: AnyCall, method: string, logger: Logger): CallContext {
  const controller = new AbortController();
  // Every call kind emits 'cancelled'; the union's overloads do not line up for TypeScript.
  (call as ServerUnaryCall<unknown, unknown>).once('cancelled', () =>
    controller.abort(new Error(`${method}: cancelled by the client or its deadline`)),
  );
  const deadline = call.getDeadline();
  const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
  return {
    signal: controller.signal,
    deadline: Number.isFinite(deadlineMs) ? deadlineMs : Number.POSITIVE_INFINITY,
    peer: call.getPeer(),
    logger: logger.child({ method }),
  };
}

/**
 * Answers a call exactly once: the result, or the error mapped through the status table. An
 * error outside the table is logged with its cause and answered INTERNAL with a generic message.
 */
function respond<Res>(
  run: () => Promise<Res>,
  callback: sendUnaryData<Res>,
  ctx: CallContext,
): void {
  run().then(
    (response) => callback(null, response),
    (err: unknown) => {
      const answer = toStatus(err);
      if (!answer.expected && !ctx.signal.aborted)
        ctx.logger.error('call failed unexpectedly', { err });
      callback({ code: answer.code, details: answer.details, metadata: answer.metadata });
    },
  );
}

/** Adapts a service method to a grpc-js unary handler. */
export function unaryHandler<Req, Res>(
  method: string,
  implementation: UnaryMethod<Req, Res>,
  logger: Logger,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const ctx = contextOf(call as AnyCall, method, logger);
    respond(async () => implementation(parsed(method, call.request), ctx), callback, ctx);
  };
}

/**
 * Adapts a service method to a grpc-js client-streaming handler. The method reads the requests
 * as an async iterable; a client that cancels ends the iteration with an error.
 */
export function clientStreamHandler<Req, Res>(
  method: string,
  implementation: ClientStreamMethod<Req, Res>,
  logger: Logger,
): handleClientStreamingCall<Req, Res> {
  return (call, callback) => {
    const ctx = contextOf(call as AnyCall, method, logger);
    respond(() => implementation(readStream<Req>(method, call, ctx.signal), ctx), callback, ctx);
  };
}

async function* readStream<Req>(
  method: string,
  call: ServerReadableStream<Req, unknown>,
  signal: AbortSignal,
): AsyncIterable<Req> {
  for await (const message of call) {
    signal.throwIfAborted();
    yield parsed(method, message as Req);
  }
  signal.throwIfAborted();
}

/**
 * Adapts a service method to a grpc-js server-streaming handler. The method sends messages with
 * `send` (which waits while the stream's buffer is full) until it returns; a thrown error ends the
 * stream with its mapped status. A cancelled call aborts `ctx.signal`.
 */
export function serverStreamHandler<Req, Res>(
  method: string,
  implementation: ServerStreamMethod<Req, Res>,
  logger: Logger,
): handleServerStreamingCall<Req, Res> {
  return (call) => {
    const ctx = contextOf(call as AnyCall, method, logger);
    // A full buffer waits for 'drain', which never comes once the caller has gone: the wait also
    // ends when the call is cancelled, so the implementation reaches its `finally`.
    const send = (message: Res): Promise<void> =>
      new Promise((resolve) => {
        if (ctx.signal.aborted) return resolve();
        if (call.write(message)) return resolve();
        let unlink = (): void => undefined;
        const done = (): void => {
          call.off('drain', done);
          unlink();
          resolve();
        };
        call.once('drain', done);
        unlink = onAbort(ctx.signal, done);
      });
    Promise.resolve()
      .then(() => implementation(parsed(method, call.request), ctx, send))
      .then(
        () => call.end(),
        (err: unknown) => {
          if (ctx.signal.aborted) return;
          const answer = toStatus(err);
          if (!answer.expected) ctx.logger.error('stream failed unexpectedly', { err });
          call.emit('error', {
            code: answer.code,
            details: answer.details,
            metadata: answer.metadata,
          });
        },
      );
  };
}

/**
 * Adapts a unary service method to a grpc-js bidi-streaming handler: each request the stream
 * brings is answered by one reply, in the order of the requests (requests run as they come; a
 * later one may finish first). The first error ends the stream with its mapped status, and no
 * later request is answered; the client's half-close ends it once every reply is written.
 */
export function bidiStreamHandler<Req, Res>(
  method: string,
  implementation: UnaryMethod<Req, Res>,
  logger: Logger,
): handleBidiStreamingCall<Req, Res> {
  return (call) => {
    const ctx = contextOf(call as AnyCall, method, logger);
    let replies = Promise.resolve();
    let failed = false;
    const fail = (err: unknown): void => {
      if (failed || ctx.signal.aborted) return;
      failed = true;
      const answer = toStatus(err);
      if (!answer.expected) ctx.logger.error('stream failed unexpectedly', { err });
      call.emit('error', { code: answer.code, details: answer.details, metadata: answer.metadata });
    };
    call.on('data', (message: Req) => {
      if (failed) return;
      // Settled at once (no rejection waits unhandled for the replies before it), written in turn.
      const reply = Promise.resolve()
        .then(() => implementation(parsed(method, message), ctx))
        .then(
          (response) => ({ response }),
          (error: unknown) => ({ error }),
        );
      replies = replies.then(async () => {
        const outcome = await reply;
        if (failed || ctx.signal.aborted) return;
        if ('error' in outcome) fail(outcome.error);
        else call.write(outcome.response);
      });
    });
    call.on('end', () => {
      replies = replies.then(() => {
        if (!failed && !ctx.signal.aborted) call.end();
      });
    });
  };
}
