import type { ServerErrorCodeName } from '@pserver/proto';
import type { ErrorFacts } from '@pserver/rpc';

/**
 * Error codes of the pserver's service: the proto `ErrorCode` names it may throw (mapped to gRPC
 * statuses by libs/rpc's table). A name outside the enum does not compile.
 */
export type PserverErrorCode = Extract<
  ServerErrorCodeName,
  `PSERVER_${string}` | 'DEADLINE_EXCEEDED' | 'CANCELLED'
>;

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

/** A request computed under an older shard epoch: refresh the view and redo the step. */
export function staleEpoch(requested: number, current: number): PserverError {
  return new PserverError(
    'PSERVER_STALE_EPOCH',
    `context.shardEpoch ${requested} is older than the shard's epoch ${current}: refresh the view and redo the step`,
    { shardEpoch: current },
  );
}
