import { ManifestStore, type MetaStore } from '@pserver/checkpoint';
import { TenureBase } from './shard-tenure';

/**
 * The tenure of a standalone pserver: the shard given on the command line, its manifest in the
 * checkpoint directory, and the epoch the manifest raised on this start. No one else serves the
 * shard, so nothing ends the tenure from outside; `lose` still does (a failed commit, a stop).
 */
export class StandaloneTenure extends TenureBase {
  readonly mode = 'standalone';

  constructor(facts: { index: number; shardCount: number; epoch: number }, store: MetaStore) {
    super({ ...facts, blockSize: 0 }, store);
  }

  /** Opens the shard's manifest, which raises the standalone epoch durably before anything is served. */
  static async open(root: string, index: number, shardCount: number): Promise<StandaloneTenure> {
    const store = await ManifestStore.open(root, index, shardCount);
    return new StandaloneTenure({ index, shardCount, epoch: store.epoch }, store);
  }

  confirm(): Promise<boolean> {
    return Promise.resolve(this.holds());
  }

  announceServing(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
