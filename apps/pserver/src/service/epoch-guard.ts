import { PserverError } from './errors';

/**
 * Compares the shard epoch a request was computed under with the shard's own (DESIGN section 4).
 * Lower: the caller's view is stale (ABORTED with the current epoch, so it can refresh and redo
 * its step). Higher: in cluster mode the pserver may have been replaced and must find out; a
 * standalone pserver knows it is its own successor, so a higher epoch is bogus.
 */
export interface EpochGuard {
  readonly current: number;
  check(requested: number): void | Promise<void>;
}

export function staleEpoch(requested: number, current: number): PserverError {
  return new PserverError(
    'PSERVER_STALE_EPOCH',
    `context.shardEpoch ${requested} is older than the shard's epoch ${current}: refresh the view and redo the step`,
    { shardEpoch: current },
  );
}

/** The standalone guard: the epoch is fixed for the life of the process. */
export class FixedEpochGuard implements EpochGuard {
  constructor(readonly current: number) {}

  check(requested: number): void {
    if (requested === this.current) return;
    if (requested < this.current) throw staleEpoch(requested, this.current);
    throw new PserverError(
      'PSERVER_BOGUS_EPOCH',
      `context.shardEpoch ${requested} is newer than the shard's epoch ${this.current}, which no pserver of this shard has had`,
    );
  }
}
