import type { ErrorFacts } from '@pserver/rpc';

/** Error codes the master's service throws itself (coordination throws the others). */
export type MasterErrorCode =
  | 'MASTER_NOT_LEADER'
  | 'MASTER_SESSION_EXPIRED'
  | 'MASTER_INVALID_ARGUMENT'
  | 'MASTER_INVALID_DATASET'
  | 'MASTER_DATASET_ALREADY_SET'
  | 'MASTER_UNKNOWN_TASK';

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
