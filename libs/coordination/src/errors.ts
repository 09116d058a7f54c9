import type { ServerErrorCodeName } from '@pserver/proto';

/**
 * Error codes of coordination: proto `ErrorCode` names (mapped to gRPC statuses by libs/rpc's
 * table). A name listed here that is not in the enum drops out, and throwing it does not compile.
 */
export type CoordinationErrorCode = Extract<
  ServerErrorCodeName,
  | 'PSERVER_FENCED'
  | 'PSERVER_MEMBER_TAKEN'
  | 'MASTER_NOT_LEADER'
  | 'MASTER_SESSION_EXPIRED'
  | 'MASTER_NOT_INIT_OWNER'
  | 'MASTER_SHARDS_IN_USE'
  | 'MASTER_PLACEMENT_FIXED'
  | 'MASTER_JOB_FINISHED'
  | 'MASTER_RESHAPE_PENDING'
  | 'MASTER_INVALID_ARGUMENT'
  | 'CHECKPOINT_CORRUPT'
>;

export class CoordinationError extends Error {
  override readonly name = 'CoordinationError';

  constructor(
    readonly code: CoordinationErrorCode,
    message: string,
    readonly facts?: { leader?: string },
  ) {
    super(message);
  }
}
