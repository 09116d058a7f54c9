import type { ShardTenure } from '@pserver/coordination';
import { PserverError } from '../shard/errors';

/**
 * Compares the shard epoch a request was computed under with the tenure's (DESIGN section 4).
 * Lower: the caller's view is stale (ABORTED with the current epoch, so it can refresh and redo
 * its step). Higher: a standalone pserver knows it is its own successor, so the epoch is bogus; a
 * cluster pserver may have been replaced and asks the tenure to confirm by a linearizable read.
 * Replaced: the tenure ends and the call is refused PSERVER_FENCED. Still the holder: the epoch
 * is bogus (INVALID_ARGUMENT), and a buggy client fences nothing.
 */
export async function checkEpoch(tenure: ShardTenure, requested: number): Promise<void> {
  const current = tenure.epoch;
  if (requested === current) return;
  if (requested < current) throw staleEpoch(requested, current);
  if (tenure.mode === 'standalone') {
    throw new PserverError(
      'PSERVER_BOGUS_EPOCH',
      `context.shardEpoch ${requested} is newer than the shard's epoch ${current}, which no pserver of this shard has had`,
    );
  }
  if (await tenure.confirm()) {
    throw new PserverError(
      'PSERVER_BOGUS_EPOCH',
      `context.shardEpoch ${requested} is newer than the shard's epoch ${current}, yet this pserver still holds the shard`,
    );
  }
  tenure.require();
  throw new PserverError('PSERVER_FENCED', 'this pserver was replaced; refresh the cluster view');
}

export function staleEpoch(requested: number, current: number): PserverError {
  return new PserverError(
    'PSERVER_STALE_EPOCH',
    `context.shardEpoch ${requested} is older than the shard's epoch ${current}: refresh the view and redo the step`,
    { shardEpoch: current },
  );
}
