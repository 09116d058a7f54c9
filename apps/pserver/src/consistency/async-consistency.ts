import { asynchronous } from '@pserver/coordination';
import type { Shard } from '../shard/shard';
import { noRoster } from './roster';
import { ShardConsistency, type ShardConsistencyHooks } from './shard-consistency';

/**
 * ASYNC (PaddlePaddle's pserver): every push is applied on arrival, reads never wait, and no
 * roster counts. Its version is the pushes applied.
 */
export class AsyncConsistency extends ShardConsistency {
  constructor(shard: Shard, hooks: ShardConsistencyHooks = {}) {
    super(asynchronous, noRoster, shard, hooks);
  }

  get version(): number {
    return this.shard.appliedSeq;
  }

  get clock(): number {
    return 0;
  }
}
