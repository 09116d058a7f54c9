import type { JobState } from '@pserver/coordination';

/** The cluster as trainers see it (the proto `ClusterView`). */
export interface View {
  job: string;
  shardCount: number;
  blockSize: number;
  shards: { index: number; address: string; shardEpoch: number; member: string }[];
  revision: number;
  initialized: boolean;
}

/** The view of a job state: desired count, block size, and per index its pserver and epoch. */
export function clusterViewOf(job: string, state: JobState): View {
  const shardCount = state.desired ?? 0;
  const byIndex = new Map(state.assignments.map((a) => [a.index, a]));
  return {
    job,
    shardCount,
    blockSize: state.blockSize ?? 0,
    shards: Array.from({ length: shardCount }, (_, index) => {
      const a = byIndex.get(index);
      return {
        index,
        address: a?.address ?? '',
        shardEpoch: a?.epoch ?? 0,
        member: a?.member ?? '',
      };
    }),
    revision: state.revision,
    initialized: state.initDone,
  };
}

/** Whether two views differ in anything a trainer acts on (the revision alone does not count). */
export function sameView(a: View, b: View): boolean {
  return JSON.stringify({ ...a, revision: 0 }) === JSON.stringify({ ...b, revision: 0 });
}
