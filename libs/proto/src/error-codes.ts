import { ErrorCode } from './generated/pserver/v1/ErrorCode';

/**
 * The name of an `ErrorCode` value (proto/pserver/v1/errors.proto), as the `pserver-error-code`
 * trailer carries it; UNSPECIFIED is the absence of a code, not a code.
 */
export type ErrorCodeName = Exclude<keyof typeof ErrorCode, 'ERROR_CODE_UNSPECIFIED'>;

/** The codes clients raise themselves: they never travel. */
export type ClientErrorCodeName = Extract<ErrorCodeName, `CLIENT_${string}`>;

/** The codes a server sends; each has one gRPC status (libs/rpc's error table). */
export type ServerErrorCodeName = Exclude<ErrorCodeName, ClientErrorCodeName>;

/** Whether `value` names an `ErrorCode` value (UNSPECIFIED excluded). */
export function isErrorCodeName(value: unknown): value is ErrorCodeName {
  return (
    typeof value === 'string' &&
    value !== 'ERROR_CODE_UNSPECIFIED' &&
    Object.hasOwn(ErrorCode, value)
  );
}
