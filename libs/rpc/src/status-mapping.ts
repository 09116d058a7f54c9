import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { errorTable, isErrorCode, type ErrorCode } from './error-table';
import { metadataKeys, type ErrorFacts } from './metadata-keys';

/** What domain code throws: an Error with a string `code`, optionally with facts for the client. */
export interface CodedError extends Error {
  code: string;
  facts?: ErrorFacts;
}

/** A status to answer a call with. */
export interface StatusObject {
  code: status;
  details: string;
  metadata: Metadata;
}

/** The message an unexpected error reaches the client with: its cause goes to the log only. */
export const internalErrorMessage = 'internal error';

export function isCodedError(err: unknown): err is CodedError {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}

/**
 * The status for an error thrown by a handler. `expected` is false for errors outside the table
 * (bugs, or failures of something underneath): they become INTERNAL with a generic message, and
 * the caller logs the cause.
 */
export function toStatus(err: unknown): StatusObject & { expected: boolean } {
  const metadata = new Metadata();
  if (!isCodedError(err) || !isErrorCode(err.code)) {
    return { code: status.INTERNAL, details: internalErrorMessage, metadata, expected: false };
  }
  metadata.set(metadataKeys.errorCode, err.code);
  const { shardEpoch, leader, retryAfterMs } = err.facts ?? {};
  if (shardEpoch !== undefined) metadata.set(metadataKeys.shardEpoch, String(shardEpoch));
  if (leader !== undefined) metadata.set(metadataKeys.leader, leader);
  if (retryAfterMs !== undefined) metadata.set(metadataKeys.retryAfterMs, String(retryAfterMs));
  return {
    code: errorTable[err.code],
    details: boundedDetails(err.message),
    metadata,
    expected: true,
  };
}

/**
 * The most bytes an error's message takes in the `grpc-message` trailer, percent-encoded as
 * grpc-js sends it. Messages name the values at fault, and a value can be megabytes (a shape of
 * a million dimensions): a trailer that large exceeds every client's header-list limit (Node's
 * 64 KiB, gRPC core's 8 KiB), and a grpc-js client then never sees the answer and its connection
 * stalls until the deadline. The code and the facts travel in their own trailers, whole.
 */
export const maxDetailsBytes = 4096;

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `message` cut at a character boundary to at most `maxDetailsBytes` once percent-encoded, with
 * "…" where it was cut. A lone surrogate becomes U+FFFD: grpc-js percent-encodes the message
 * with `encodeURI`, which throws on one.
 */
export function boundedDetails(message: string): string {
  const text = message.replace(loneSurrogate, '\uFFFD');
  if (encodeURI(text).length <= maxDetailsBytes) return text;
  const ellipsis = encodeURI('…').length;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    bytes += encodeURI(char).length;
    if (bytes > maxDetailsBytes - ellipsis) break;
    end += char.length;
  }
  return `${text.slice(0, end)}…`;
}

/**
 * An error from a call, as a client sees it: the gRPC status, the domain code when the server
 * sent one, and the facts from the trailers.
 */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  /**
   * The `pserver-error-code` trailer as sent: `code`, or a code newer than this client (then
   * `code` is undefined, yet the server gave its considered answer); undefined when none came.
   */
  readonly codeName: string | undefined;

  constructor(
    /** The gRPC status code. */
    readonly status: status,
    /** The domain error code, or undefined when the server sent none (e.g. a transport error). */
    readonly code: ErrorCode | undefined,
    message: string,
    readonly facts: ErrorFacts,
    options?: { cause?: unknown; codeName?: string },
  ) {
    super(message, options);
    this.codeName = options?.codeName ?? code;
  }
}

/** The client-side view of a failed call (the inverse of `toStatus`). */
export function fromServiceError(err: ServiceError): RpcError {
  const first = (key: string): string | undefined => {
    const value = err.metadata?.get(key)[0];
    return value === undefined ? undefined : value.toString();
  };
  const number = (key: string): number | undefined => {
    const value = first(key);
    return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
  };
  const code = first(metadataKeys.errorCode);
  const facts: ErrorFacts = {};
  const shardEpoch = number(metadataKeys.shardEpoch);
  const leader = first(metadataKeys.leader);
  const retryAfterMs = number(metadataKeys.retryAfterMs);
  if (shardEpoch !== undefined) facts.shardEpoch = shardEpoch;
  if (leader !== undefined) facts.leader = leader;
  if (retryAfterMs !== undefined) facts.retryAfterMs = retryAfterMs;
  return new RpcError(err.code, isErrorCode(code) ? code : undefined, err.details, facts, {
    cause: err,
    codeName: code,
  });
}
