import type { ErrorFacts } from '@pserver/rpc';

/** Error codes of the pserver's service (mapped to gRPC statuses by libs/rpc's table). */
export type PserverErrorCode =
  | 'PSERVER_INVALID_ARGUMENT'
  | 'PSERVER_INVALID_NAME'
  | 'PSERVER_INVALID_ELEMENT_TYPE'
  | 'PSERVER_ELEMENT_TYPE_MISMATCH'
  | 'PSERVER_LENGTH_MISMATCH'
  | 'PSERVER_DUPLICATE_NAME'
  | 'PSERVER_NOT_OPTIMIZABLE'
  | 'PSERVER_NON_FINITE_GRADIENT'
  | 'PSERVER_INVALID_CONTEXT'
  | 'PSERVER_BOGUS_EPOCH'
  | 'PSERVER_WRONG_SHARD'
  | 'PSERVER_INVALID_STREAM'
  | 'PSERVER_SHAPE_MISMATCH'
  | 'PSERVER_REPLY_TOO_LARGE'
  | 'PSERVER_UNKNOWN_TENSOR'
  | 'PSERVER_ALREADY_INITIALIZED'
  | 'PSERVER_NOT_INITIALIZED'
  | 'PSERVER_STALE_EPOCH'
  | 'PSERVER_SHUTTING_DOWN'
  | 'PSERVER_FENCED'
  | 'PSERVER_NOT_SERVING'
  | 'PSERVER_OVERLOADED'
  | 'DEADLINE_EXCEEDED'
  | 'CANCELLED';

/** A typed error of the pserver: a stable code, a message naming the thing and the value. */
export class PserverError extends Error {
  override readonly name = 'PserverError';

  constructor(
    readonly code: PserverErrorCode,
    message: string,
    readonly facts?: ErrorFacts,
  ) {
    super(message);
  }
}
