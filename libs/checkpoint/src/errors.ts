import type { ServerErrorCodeName } from '@pserver/proto';

/**
 * Error codes of the checkpoint library: the proto `ErrorCode` names CHECKPOINT_* (mapped to
 * gRPC statuses by libs/rpc's table).
 */
export type CheckpointErrorCode = Extract<ServerErrorCodeName, `CHECKPOINT_${string}`>;

export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';

  constructor(
    readonly code: CheckpointErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Maps a failed file operation to a checkpoint error: a full disk is its own case. */
export function ioError(what: string, err: unknown): CheckpointError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new CheckpointError('CHECKPOINT_NO_SPACE', `${what}: no space left on the device`, {
      cause: err,
    });
  }
  const reason = err instanceof Error ? err.message : String(err);
  return new CheckpointError('CHECKPOINT_IO', `${what}: ${reason}`, { cause: err });
}
