import type { ErrorFacts } from '@pserver/rpc';

/** Error codes the master's service throws itself (coordination throws the others). */
export type MasterErrorCode = 'MASTER_NOT_LEADER' | 'MASTER_SESSION_EXPIRED';

export class MasterError extends Error {
  override readonly name = 'MasterError';

  constructor(
    readonly code: MasterErrorCode,
    message: string,
    readonly facts?: ErrorFacts,
  ) {
    super(message);
  }
}
