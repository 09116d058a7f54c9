import type { GetParamsRequest__Output, SendGradsResponse } from '@pserver/proto';
import {
  parameterServerService,
  parsed,
  WholeMessage,
  type DirectCall,
  type DirectMethod,
} from '@pserver/rpc';
import type { UnparsableRequest } from '@pserver/rpc';
import type { ParameterService } from '../../service/parameter-service';
import { streamCancelled, type Placement, type PushStaging } from '../../service/push-staging';
import { encodeParams } from './params-reply';
import { encodePushReply } from './push-reply';
import { PushDecoder, type DecodedPush, type PushLayout } from './push-decoder';
import { ReplyBuffers } from './reply-buffers';

const path = (method: string): string => `/pserver.v1.ParameterServer/${method}`;
const definition = parameterServerService;

/** A SendGradsRequest's gradients are `Tensor`s; a SendGradsChunk's are `GradientChunk`s. */
const requestLayout: PushLayout = {
  shapeField: 3,
  offsetField: undefined,
  decodeWhole: (bytes) => definition.SendGrads.requestDeserialize(bytes),
};
const chunkLayout: PushLayout = {
  shapeField: 5,
  offsetField: 3,
  decodeWhole: (bytes) => definition.SendGradsStream.requestDeserialize(bytes),
};

type Decoded = DecodedPush | { undecodable: unknown };

/** The push, or the error for a message that is not one. */
function pushOf(method: string, decoded: Decoded): DecodedPush {
  if ('undecodable' in decoded) parsed(method, decoded.undecodable as UnparsableRequest);
  return decoded as DecodedPush;
}

/** The bytes of a push message's gradients and row slices (payload metrics). */
function payloadBytes(push: DecodedPush): number {
  let bytes = 0;
  for (const g of push.grads) bytes += g.content.byteLength;
  for (const s of push.sparse) bytes += s.ids.byteLength + s.grads.byteLength + s.counts.byteLength;
  return bytes;
}

/**
 * The pserver's data path: SendGrads, SendGradsStream and GetParams served straight on HTTP/2
 * (`DirectCall`), with the same service methods, checks and answers as through grpc-js, but
 * with a gradient's bytes written into the place it is applied from as they arrive, and a pull's
 * values copied once into buffers used again. Every other method stays grpc-js's.
 */
export function dataPathMethods(service: () => ParameterService): Map<string, DirectMethod> {
  const replies = new ReplyBuffers();
  return new Map<string, DirectMethod>([
    [path('SendGrads'), (call) => sendGrads(call, service)],
    [path('SendGradsStream'), (call) => sendGradsStream(call, service)],
    [path('GetParams'), (call) => getParams(call, service, replies)],
  ]);
}

/**
 * A push's staging place, taken when the call begins so its bytes land there as they come, and
 * handed to the service with the push. The service may be replaced while they do (a new tenure):
 * the new one then reads the bytes from it into its own, and frees it when the push is done.
 */
class Staging {
  readonly push: PushStaging | undefined;
  private handedOver = false;

  constructor(service: () => ParameterService) {
    let owner: ParameterService | undefined;
    try {
      owner = service();
    } catch {
      owner = undefined; // not serving yet: the bytes are kept aside, and the call refused
    }
    this.push = owner?.newPush();
  }

  place = (name: string, offset: number, byteLength: number): Placement | undefined =>
    this.push?.placeFor(name, offset, byteLength);

  /** Runs the push on the current service; the staging is its from now on. */
  run(
    service: () => ParameterService,
    send: (service: ParameterService, push: PushStaging | undefined) => Promise<SendGradsResponse>,
  ): Promise<SendGradsResponse> {
    this.handedOver = true;
    return Promise.resolve().then(() => {
      let current: ParameterService;
      try {
        current = service();
      } catch (err) {
        this.push?.discard();
        throw err;
      }
      return send(current, this.push);
    });
  }

  /** Frees the staging of a call that ended before its push was handed over. */
  abandon(): void {
    if (!this.handedOver) this.push?.discard();
  }
}

function sendGrads(call: DirectCall, service: () => ParameterService): void {
  const staging = new Staging(service);
  let decoded: Decoded | undefined;
  const decoder = new PushDecoder(requestLayout, staging.place, (message) => {
    decoded = message;
  });
  // Answered early (a deadline, a framing error) or broken off: the push will not be run.
  call.onAborted(() => staging.abandon());
  call.readUnary(decoder, () => {
    let push: DecodedPush;
    try {
      push = pushOf('SendGrads', decoded!);
    } catch (err) {
      staging.abandon();
      return call.fail(err);
    }
    call.payload('in', payloadBytes(push));
    answer(
      call,
      staging.run(service, (current, staged) => current.sendGrads(push, call, staged)),
    );
  });
}

/** How many decoded chunks may wait for the service before the stream is paused. */
const maxQueuedChunks = 8;

function sendGradsStream(call: DirectCall, service: () => ParameterService): void {
  const staging = new Staging(service);
  const queue = new ChunkQueue(call);
  const decoder = new PushDecoder(chunkLayout, staging.place, (message) => {
    if (!('undecodable' in message)) call.payload('in', payloadBytes(message));
    queue.push(message);
  });
  // Answered early (a deadline, a framing error) or broken off: the service stops waiting for
  // chunks, and what was staged is freed.
  call.onAborted(() => {
    staging.abandon();
    queue.close(streamCancelled());
  });
  call.readStream(decoder, () => queue.close());
  answer(
    call,
    staging.run(service, (current, staged) =>
      current.sendGradsStream(queue.messages(), call, staged),
    ),
  );
}

function getParams(call: DirectCall, service: () => ParameterService, replies: ReplyBuffers): void {
  const whole = new WholeMessage();
  call.readUnary(whole, () => {
    const taken: Buffer[] = [];
    let copied = 0;
    const copy = (bytes: Uint8Array): Uint8Array => {
      const buffer = replies.take(bytes.byteLength);
      buffer.set(bytes);
      taken.push(buffer);
      copied += bytes.byteLength;
      return buffer.subarray(0, bytes.byteLength);
    };
    Promise.resolve()
      .then(() => {
        const request = definition.GetParams.requestDeserialize(whole.message);
        return service().getParams(
          parsed('GetParams', request as GetParamsRequest__Output),
          call,
          copy,
        );
      })
      .then(
        (reply) => {
          call.payload('out', copied);
          // A write that failed may leave the buffers with the session: they are not used again.
          call.respond(encodeParams(reply), (error) => error || replies.give(taken));
        },
        (err: unknown) => {
          replies.give(taken);
          call.fail(err);
        },
      );
  });
}

function answer(call: DirectCall, reply: Promise<SendGradsResponse>): void {
  reply.then(
    (response) => call.respond([encodePushReply(response)]),
    (err: unknown) => call.fail(err),
  );
}

/**
 * The decoded chunks of a streamed push, read by the service as an async iterable. The stream is
 * paused while `maxQueuedChunks` wait, so a slow service does not make the pserver hold a whole
 * push's messages at once.
 */
class ChunkQueue {
  private readonly chunks: Decoded[] = [];
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly call: DirectCall) {}

  push(chunk: Decoded): void {
    this.chunks.push(chunk);
    if (this.chunks.length >= maxQueuedChunks) this.call.pause();
    this.wake?.();
  }

  /** No more chunks: the client half-closed, or (with `error`) the call ended without one. */
  close(error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.wake?.();
  }

  async *messages(): AsyncIterable<DecodedPush> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) {
        if (this.chunks.length < maxQueuedChunks) this.call.resume();
        yield pushOf('SendGradsStream', chunk);
        continue;
      }
      if (this.ended) {
        if (this.error) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
