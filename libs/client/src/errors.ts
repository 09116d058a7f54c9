import { status } from '@grpc/grpc-js';
import {
  actionOf,
  ErrorCode,
  errorCodeRule,
  type ClientAction,
  type ErrorCode__Output,
} from '@pserver/proto';
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
 * The contract's action on `err` (proto/testdata/error_codes.json; `clientActions` in
 * `@pserver/proto` says what each means): by its code when this client knows it, else by its
 * gRPC status, without a code or with one newer than this client. Undefined for an error that is
 * neither a server's (`RpcError`) nor the client's (`ClientError`).
 */
export function clientActionOf(err: unknown): ClientAction | undefined {
  if (err instanceof ClientError) return errorCodeRule[err.code].action;
  if (err instanceof RpcError) return actionOf(status[err.status], err.codeName);
  return undefined;
}

/** Whether the contract's action on `err` is RERUN_STEP: the step's view is stale. */
export function isStale(err: unknown): boolean {
  return clientActionOf(err) === 'RERUN_STEP';
}

/** Whether the contract's action on `err` is RESEND_PREVIOUS_STEP (PSERVER_RESEND_STEP). */
export function isResendStep(err: unknown): boolean {
  return clientActionOf(err) === 'RESEND_PREVIOUS_STEP';
}

/** Whether the contract's action on `err` is WAIT_FOR_SHARD: nothing was applied. */
export function isShardUnavailable(err: unknown): boolean {
  return clientActionOf(err) === 'WAIT_FOR_SHARD';
}

/** Whether the contract's action on `err` is REFUSED: raised at once, never waited out. */
export function isRefused(err: unknown): boolean {
  return clientActionOf(err) === 'REFUSED';
}

/** Whether the contract's action on `err` is RETRY or BACK_OFF: the same call is sent again. */
export function isRetryable(err: unknown): boolean {
  const action = clientActionOf(err);
  return action === 'RETRY' || action === 'BACK_OFF';
}

/**
 * `err` as `CLIENT_MESSAGE_TOO_LARGE` when it is gRPC's own RESOURCE_EXHAUSTED (no domain code: a
 * message over the sender's or the receiver's size limit; its action is FAIL), else `err`
 * unchanged.
 */
export function asMessageTooLarge(err: unknown, what: string, maxMessageBytes: number): unknown {
  if (!(err instanceof RpcError) || err.status !== status.RESOURCE_EXHAUSTED) return err;
  if (err.codeName !== undefined) return err;
  return new ClientError(
    'CLIENT_MESSAGE_TOO_LARGE',
    `${what}: a message over gRPC's size limit (the client's maxMessageBytes is ` +
      `${maxMessageBytes}; the server's is its --max-message-mb): raise both limits or lower ` +
      `the job's block size (${err.message})`,
    { cause: err },
  );
}
