import { status } from '@grpc/grpc-js';
import { errorCodeRule, type ServerErrorCodeName } from '@pserver/proto';

/**
 * The one table from error codes to gRPC status codes (DESIGN section 6), made from the contract's
 * rules (proto/testdata/error_codes.json): every code a server may send has exactly one status.
 * Domain code throws errors with a string `code`; transports answer with the status listed here
 * and send the code itself in the `pserver-error-code` trailer. An error whose code is not in the
 * table is a bug: it is answered INTERNAL and logged. CLIENT_* codes never travel.
 */
export const errorTable = Object.fromEntries(
  Object.entries(errorCodeRule).flatMap(([code, rule]) =>
    rule.status === null ? [] : [[code, status[rule.status]]],
  ),
) as { readonly [C in ServerErrorCodeName]: status };

/** A code a server sends: an `ErrorCode` name other than UNSPECIFIED and CLIENT_*. */
export type ErrorCode = keyof typeof errorTable;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(errorTable, code);
}
