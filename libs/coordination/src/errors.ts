/** Error codes of coordination (mapped to gRPC statuses by libs/rpc's table). */
export type CoordinationErrorCode =
  | 'PSERVER_FENCED'
  | 'PSERVER_MEMBER_TAKEN'
  | 'MASTER_NOT_LEADER'
  | 'MASTER_SESSION_EXPIRED'
  | 'MASTER_NOT_INIT_OWNER'
  | 'MASTER_SHARDS_IN_USE'
  | 'MASTER_PLACEMENT_FIXED'
  | 'MASTER_INVALID_ARGUMENT';

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
