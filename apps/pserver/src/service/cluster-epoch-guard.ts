import type { EpochGuard } from './epoch-guard';
import { staleEpoch } from './epoch-guard';
import { PserverError } from './errors';

/**
 * The cluster-mode epoch check (DESIGN section 4). A lower epoch is a stale view (ABORTED). A
 * higher one means this pserver may have been replaced: a linearizable read of `assign/<i>`
 * decides. Replaced: fence and refuse. Still the holder: the epoch is bogus (INVALID_ARGUMENT),
 * and a buggy client fences nothing.
 */
export class ClusterEpochGuard implements EpochGuard {
  constructor(
    readonly current: number,
    private readonly stillHolds: () => Promise<boolean>,
    private readonly onReplaced: (reason: string) => void,
  ) {}

  async check(requested: number): Promise<void> {
    if (requested === this.current) return;
    if (requested < this.current) throw staleEpoch(requested, this.current);
    if (await this.stillHolds()) {
      throw new PserverError(
        'PSERVER_BOGUS_EPOCH',
        `context.shardEpoch ${requested} is newer than the shard's epoch ${this.current}, yet this pserver still holds the shard`,
      );
    }
    this.onReplaced(
      `a request carried epoch ${requested} and the shard is no longer held with epoch ${this.current}`,
    );
    throw new PserverError('PSERVER_FENCED', 'this pserver was replaced; refresh the cluster view');
  }
}
