import { status } from '@grpc/grpc-js';
import type { ServerErrorCodeName } from '@pserver/proto';

/**
 * The one table from error codes to gRPC status codes (DESIGN section 6), keyed by the proto's
 * `ErrorCode` names: every code a server may send has exactly one entry (a code missing here, or
 * one that is not in the enum, does not compile), with the status its group in errors.proto
 * names. Domain code throws errors with a string `code`; transports answer with the status listed
 * here and send the code itself in the `pserver-error-code` trailer. An error whose code is not
 * in the table is a bug: it is answered INTERNAL and logged. CLIENT_* codes never travel.
 */
export const errorTable = {
  // Bad input: the request cannot succeed as sent. Nothing changed.
  PSERVER_INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  PSERVER_INVALID_NAME: status.INVALID_ARGUMENT,
  PSERVER_INVALID_ELEMENT_TYPE: status.INVALID_ARGUMENT,
  PSERVER_ELEMENT_TYPE_MISMATCH: status.INVALID_ARGUMENT,
  PSERVER_LENGTH_MISMATCH: status.INVALID_ARGUMENT,
  PSERVER_DUPLICATE_NAME: status.INVALID_ARGUMENT,
  PSERVER_NOT_OPTIMIZABLE: status.INVALID_ARGUMENT,
  PSERVER_NON_FINITE_GRADIENT: status.INVALID_ARGUMENT,
  PSERVER_INVALID_CONTEXT: status.INVALID_ARGUMENT,
  PSERVER_BOGUS_EPOCH: status.INVALID_ARGUMENT,
  PSERVER_WRONG_SHARD: status.INVALID_ARGUMENT,
  PSERVER_INVALID_STREAM: status.INVALID_ARGUMENT,
  PSERVER_SHAPE_MISMATCH: status.INVALID_ARGUMENT,
  PSERVER_REPLY_TOO_LARGE: status.INVALID_ARGUMENT,
  OPTIMIZER_INVALID_CONFIG: status.INVALID_ARGUMENT,
  OPTIMIZER_UNSUPPORTED_ELEMENT_TYPE: status.INVALID_ARGUMENT,
  OPTIMIZER_NON_FINITE_GRADIENT: status.INVALID_ARGUMENT,
  OPTIMIZER_LENGTH_MISMATCH: status.INVALID_ARGUMENT,
  OPTIMIZER_INVALID_STATE: status.INVALID_ARGUMENT,
  MASTER_INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  MASTER_INVALID_DATASET: status.INVALID_ARGUMENT,
  RPC_UNPARSABLE_MESSAGE: status.INVALID_ARGUMENT,

  // Unknown things.
  PSERVER_UNKNOWN_TENSOR: status.NOT_FOUND,
  MASTER_SESSION_EXPIRED: status.NOT_FOUND,
  MASTER_UNKNOWN_TASK: status.NOT_FOUND,

  // Right request, wrong lifecycle state.
  PSERVER_ALREADY_INITIALIZED: status.FAILED_PRECONDITION,
  PSERVER_NOT_INITIALIZED: status.FAILED_PRECONDITION,
  MASTER_DATASET_ALREADY_SET: status.FAILED_PRECONDITION,
  MASTER_SHARDS_IN_USE: status.FAILED_PRECONDITION,
  MASTER_NOT_INIT_OWNER: status.FAILED_PRECONDITION,
  PSERVER_MEMBER_TAKEN: status.FAILED_PRECONDITION,
  PSERVER_NOT_REPLICA: status.FAILED_PRECONDITION,
  PSERVER_NOT_IN_ROSTER: status.FAILED_PRECONDITION,
  PSERVER_RESEND_STEP: status.FAILED_PRECONDITION,
  PSERVER_CANNOT_DRAIN: status.FAILED_PRECONDITION,
  MASTER_PLACEMENT_FIXED: status.FAILED_PRECONDITION,
  MASTER_JOB_FINISHED: status.FAILED_PRECONDITION,
  CHECKPOINT_INCOMPATIBLE: status.FAILED_PRECONDITION,

  // The caller's view is stale: refresh it and redo the work (trailer: pserver-shard-epoch).
  PSERVER_STALE_EPOCH: status.ABORTED,

  // Try elsewhere or later: not the leader (trailer: pserver-leader), shutting down, fenced,
  // not serving yet, a checkpoint I/O error that may pass.
  PSERVER_SHUTTING_DOWN: status.UNAVAILABLE,
  PSERVER_FENCED: status.UNAVAILABLE,
  PSERVER_NOT_SERVING: status.UNAVAILABLE,
  MASTER_NOT_LEADER: status.UNAVAILABLE,
  CHECKPOINT_IO: status.UNAVAILABLE,

  // Out of a resource: back off and retry (trailer: pserver-retry-after-ms).
  PSERVER_OVERLOADED: status.RESOURCE_EXHAUSTED,
  CHECKPOINT_NO_SPACE: status.RESOURCE_EXHAUSTED,
  PSERVER_TABLE_FULL: status.RESOURCE_EXHAUSTED,

  // Stored data that cannot be read back.
  CHECKPOINT_CORRUPT: status.DATA_LOSS,

  // Who is calling: no verified client certificate or valid bearer token, or a role that may
  // not call the method (SECURITY.md). Nothing ran.
  AUTH_UNAUTHENTICATED: status.UNAUTHENTICATED,
  AUTH_PERMISSION_DENIED: status.PERMISSION_DENIED,

  // Waiting ended.
  DEADLINE_EXCEEDED: status.DEADLINE_EXCEEDED,
  CANCELLED: status.CANCELLED,
} as const satisfies Record<ServerErrorCodeName, status>;

/** A code a server sends: an `ErrorCode` name other than UNSPECIFIED and CLIENT_*. */
export type ErrorCode = keyof typeof errorTable;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(errorTable, code);
}
