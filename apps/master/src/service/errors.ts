import type { ServerErrorCodeName } from '@pserver/proto';
import type { ErrorFacts } from '@pserver/rpc';

/**
 * Error codes the master's service throws itself (coordination throws the others): the proto
 * `ErrorCode` names of the master. A name outside the enum does not compile.
 */
export type MasterErrorCode = Extract<ServerErrorCodeName, `MASTER_${string}`>;

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
