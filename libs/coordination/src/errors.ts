/** Error codes of coordination (mapped to gRPC statuses by libs/rpc's table). */
export type CoordinationErrorCode = 'PSERVER_FENCED' | 'PSERVER_MEMBER_TAKEN' | 'MASTER_NOT_LEADER';

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
