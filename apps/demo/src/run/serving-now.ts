import type { ManagedProcess } from '@pserver/local-cluster';

/** What the demo reads of a pserver to know what it serves: whether it runs, its latest lines. */
export type ServingProcess = Pick<ManagedProcess, 'running' | 'lastLog'>;

/** The shard a pserver serves, from its latest `serving` line. */
export interface Served<P> {
  pserver: P;
  /** Its lease epoch on the index (an etcd revision: a later tenure has a higher one). */
  epoch: number;
  /** The job's shard count it serves under. */
  shardCount: number;
  /** Its `serving` line: when (`time`), and what it recovered from (`recovered`, `reshaped`…). */
  line: Record<string, unknown>;
}

/**
 * Which running pserver serves each index now, read from the pservers' logs: of the pservers
 * whose latest `serving` line names the index, the one at the highest lease epoch. A pserver that
 * handed that very tenure back (`handed the shard back` at its epoch: the job changes its shard
 * count) serves nothing until its next `serving` line — its old line would otherwise stand for an
 * index the job no longer has (4 → 3), or for one another pserver is restoring.
 */
export function servingNow<P extends { process: ServingProcess }>(
  pservers: readonly P[],
): Map<number, Served<P>> {
  const byIndex = new Map<number, Served<P>>();
  for (const pserver of pservers) {
    if (!pserver.process.running) continue;
    const line = pserver.process.lastLog('serving');
    if (!line) continue;
    const epoch = Number(line.shardEpoch);
    const handedBack = pserver.process.lastLog('handed the shard back');
    if (handedBack && Number(handedBack.shardEpoch) === epoch) continue;
    const index = Number(line.index);
    const known = byIndex.get(index);
    if (!known || known.epoch < epoch)
      byIndex.set(index, { pserver, epoch, shardCount: Number(line.shardCount), line });
  }
  return byIndex;
}
