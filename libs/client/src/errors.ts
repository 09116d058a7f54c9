import { status } from '@grpc/grpc-js';
import { RpcError } from '@pserver/rpc';

/** Error codes of the client itself. */
export type ClientErrorCode =
  | 'CLIENT_STALE_VIEW'
  | 'CLIENT_NO_MASTER'
  | 'CLIENT_STEP_FAILED'
  | 'CLIENT_DEADLINE_EXCEEDED'
  | 'CLIENT_CLOSED'
  | 'CLIENT_UNKNOWN_TENSOR'
  | 'CLIENT_NOT_A_FILE_TASK';

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
 * moved (ABORTED), the pserver at that address serves another index, or the client aborted the
 * step when a new view came. The step is then run again with a fresh context.
 */
export function isStaleView(err: unknown): boolean {
  if (err instanceof ClientError) return err.code === 'CLIENT_STALE_VIEW';
  if (!(err instanceof RpcError)) return false;
  return err.status === status.ABORTED || err.code === 'PSERVER_WRONG_SHARD';
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

/** Whether a push's outcome is unknown (it may or may not have been applied): retry it as is. */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof RpcError)) return false;
  if (err.status === status.RESOURCE_EXHAUSTED) return true;
  // A domain code other than these two is the server's considered answer, not an unknown outcome.
  if (err.code !== undefined && err.code !== 'DEADLINE_EXCEEDED' && err.code !== 'CANCELLED')
    return false;
  return (
    err.status === status.UNAVAILABLE ||
    err.status === status.DEADLINE_EXCEEDED ||
    err.status === status.CANCELLED ||
    err.status === status.INTERNAL
  );
}
