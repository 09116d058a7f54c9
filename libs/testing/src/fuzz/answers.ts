import { status } from '@grpc/grpc-js';
import { loaderOptions, messageType } from '@pserver/proto';
import { errorTable, isErrorCode } from '@pserver/rpc';
import type { RawAnswer } from './raw-client';

/** Whether the server's parser (proto-loader's: protobufjs decode, then toObject) accepts `bytes`. */
export function parses(typeName: string, bytes: Uint8Array): boolean {
  const type = messageType(typeName);
  try {
    type.toObject(type.decode(bytes), loaderOptions);
    return true;
  } catch {
    return false;
  }
}

/** What the checker knows about the request an answer is for. */
export interface SentRequest {
  /** The request messages' type, e.g. `SendGradsRequest`. */
  requestType: string;
  /** The response's type, e.g. `SendGradsResponse`. */
  responseType: string;
  /** The messages sent (one for a unary call). */
  messages: readonly Uint8Array[];
  /** The server's limit on a received message (`grpc.max_receive_message_length`). */
  maxMessageBytes: number;
}

/**
 * Why `answer` is not a documented answer to `request`, or undefined when it is.
 *
 * Documented: OK with a response that parses; an error from our code, which carries a
 * `pserver-error-code` trailer listed in the error table with exactly the table's status (the
 * table has no INTERNAL or UNKNOWN: those are for bugs); and the answers gRPC itself gives to
 * malformed input, recognized by the input, never by the message text:
 * - RESOURCE_EXHAUSTED when a message is over the server's size limit;
 * - CANCELLED when the client broke the call off itself.
 *
 * A message that is not a protobuf of its type is INVALID_ARGUMENT with RPC_UNPARSABLE_MESSAGE
 * (libs/rpc maps it; grpc-js alone answers INTERNAL "Error deserializing request"), and that code
 * comes only for such a message: the server's parser (same protobufjs, same options) is replayed
 * here to know.
 */
export function undocumentedAnswer(answer: RawAnswer, request: SentRequest): string | undefined {
  const name = status[answer.status] ?? String(answer.status);
  const described = `${name} ${JSON.stringify(answer.details.slice(0, 300))}`;
  const oversized = request.messages.some((m) => m.byteLength > request.maxMessageBytes);
  const unparsable = request.messages.some((m) => !parses(request.requestType, m));
  if (answer.status === status.OK) {
    if (answer.ending === 'broken-off') return `OK to a call the client broke off`;
    if (!answer.body || !parses(request.responseType, answer.body))
      return `OK with a response that is not a ${request.responseType}`;
    if (unparsable) return `OK to a message that is not a ${request.requestType}`;
    return undefined;
  }
  if (answer.errorCode !== undefined) {
    if (!isErrorCode(answer.errorCode))
      return `${described} with pserver-error-code ${answer.errorCode}, which is not in the error table`;
    const expected = errorTable[answer.errorCode];
    if (answer.status !== expected)
      return `${described} with pserver-error-code ${answer.errorCode}, which the table maps to ${status[expected]}`;
    if (answer.errorCode === 'RPC_UNPARSABLE_MESSAGE' && !unparsable)
      return `${described} to messages that all parse as ${request.requestType}`;
    if (
      request.messages.length === 1 &&
      unparsable &&
      !oversized &&
      answer.errorCode !== 'RPC_UNPARSABLE_MESSAGE'
    )
      return `${described} to a message that is not a ${request.requestType} (RPC_UNPARSABLE_MESSAGE expected)`;
    return undefined;
  }
  if (answer.status === status.RESOURCE_EXHAUSTED && oversized) return undefined;
  if (answer.status === status.CANCELLED && answer.ending === 'broken-off') return undefined;
  return `${described} without a pserver-error-code trailer (${
    oversized
      ? 'a message over the size limit'
      : unparsable
        ? 'an unparsable message'
        : 'a parsable message within the size limit'
  })`;
}
