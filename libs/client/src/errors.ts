import { status } from '@grpc/grpc-js';
import { ErrorCode, type ErrorCode__Output } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';

/** Error codes of the client itself: the CLIENT_* values of the contract's `ErrorCode` enum. */
export type ClientErrorCode = Extract<ErrorCode__Output, `CLIENT_${string}`>;

/** Every client error code, in the contract's order (proto/pserver/v1/errors.proto). */
export const clientErrorCodes: readonly ClientErrorCode[] = Object.values(ErrorCode).filter(
  (code): code is ClientErrorCode => code.startsWith('CLIENT_'),
);

/**
 * A typed client error. Server errors reach callers as `RpcError` (gRPC status, domain code,
 * facts); the client's own conditions as `ClientError`.
 */
export class ClientError extends Error {
  override readonly name = 'ClientError';

  constructor(
    readonly code: ClientErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Whether an error means "the view this step was computed under is stale": the shard's epoch
 * moved (ABORTED), the pserver at that address serves another index (PSERVER_WRONG_SHARD), or
 * the client aborted the step when a new view came (CLIENT_STALE_VIEW). The step is then run
 * again with a fresh context.
 */
export function isStale(err: unknown): boolean {
  if (err instanceof ClientError) return err.code === 'CLIENT_STALE_VIEW';
  if (!(err instanceof RpcError)) return false;
  return err.status === status.ABORTED || err.code === 'PSERVER_WRONG_SHARD';
}

/**
 * Whether a SYNC shard asks for this trainer's push of the step before again: it failed over
 * without it, and that step is still open there.
 */
export function isResendStep(err: unknown): boolean {
  return err instanceof RpcError && err.code === 'PSERVER_RESEND_STEP';
}

/**
 * Whether the shard is not served at that address right now — its pserver is recovering it, was
 * fenced or is shutting down. Nothing was applied. The call is retried after a backoff: either the
 * pserver starts serving (same epoch) or the master publishes a new assignment, which aborts the
 * step's context so that the step runs again under the new view. Not a new view in itself.
 */
export function isShardUnavailable(err: unknown): boolean {
  return (
    err instanceof RpcError &&
    (err.code === 'PSERVER_NOT_SERVING' ||
      err.code === 'PSERVER_FENCED' ||
      err.code === 'PSERVER_SHUTTING_DOWN')
  );
}

/**
 * Whether the server refused the caller (UNAUTHENTICATED: no verified certificate or valid token;
 * PERMISSION_DENIED: the caller's role may not call the method). Waiting does not change that
 * answer, so it is raised at once.
 */
export function isRefused(err: unknown): boolean {
  return (
    err instanceof RpcError &&
    (err.status === status.UNAUTHENTICATED || err.status === status.PERMISSION_DENIED)
  );
}

/**
 * Whether a call's outcome is unknown (it may or may not have been applied) or its cause passes:
 * retry it as is. UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED and INTERNAL without a domain code
 * (a domain code is the server's considered answer; DEADLINE_EXCEEDED and CANCELLED are also
 * codes); RESOURCE_EXHAUSTED only with a domain code (PSERVER_OVERLOADED, CHECKPOINT_NO_SPACE:
 * wait for `pserver-retry-after-ms`; not PSERVER_TABLE_FULL, which waiting does not change).
 * gRPC's own RESOURCE_EXHAUSTED, without a code, is a
 * message over the size limit: sending it again fails the same way.
 */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof RpcError)) return false;
  if (err.status === status.RESOURCE_EXHAUSTED)
    return err.code !== undefined && err.code !== 'PSERVER_TABLE_FULL';
  if (err.code !== undefined && err.code !== 'DEADLINE_EXCEEDED' && err.code !== 'CANCELLED')
    return false;
  return (
    err.status === status.UNAVAILABLE ||
    err.status === status.DEADLINE_EXCEEDED ||
    err.status === status.CANCELLED ||
    err.status === status.INTERNAL
  );
}

/**
 * `err` as `CLIENT_MESSAGE_TOO_LARGE` when it is gRPC's own RESOURCE_EXHAUSTED (no domain code: a
 * message over the sender's or the receiver's size limit), else `err` unchanged.
 */
export function asMessageTooLarge(err: unknown, what: string, maxMessageBytes: number): unknown {
  if (!(err instanceof RpcError) || err.status !== status.RESOURCE_EXHAUSTED) return err;
  if (err.code !== undefined) return err;
  return new ClientError(
    'CLIENT_MESSAGE_TOO_LARGE',
    `${what}: a message over gRPC's size limit (the client's maxMessageBytes is ` +
      `${maxMessageBytes}; the server's is its --max-message-mb): raise both limits or lower ` +
      `the job's block size (${err.message})`,
    { cause: err },
  );
}
