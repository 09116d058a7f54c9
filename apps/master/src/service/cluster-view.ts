import { consistencyMessage, isCurrentAssignment, type JobState } from '@pserver/coordination';
import type { Consistency } from '@pserver/proto';

/** The cluster as trainers see it (the proto `ClusterView`). */
export interface View {
  job: string;
  shardCount: number;
  blockSize: number;
  shards: {
    index: number;
    address: string;
    shardEpoch: number;
    member: string;
    /** The assigned pserver announced it serves this index with this epoch (recovery done). */
    serving: boolean;
    /** The replicas of this primary. */
    replicas: { member: string; address: string; inSync: boolean }[];
  }[];
  /** Replicas the job keeps of each shard. */
  replicas: number;
  revision: number;
  initialized: boolean;
  consistency: Consistency;
  finished: boolean;
}

/**
 * The view of a job state: desired count, block size, and per index its pserver, epoch and
 * whether it serves. An assignment made under another count is shown as unassigned: it is about
 * to be replaced, and its pserver checks placement against the old count.
 *
 * During a live change of the count, an index handed back stays as `previous` (the view last
 * published) showed it until the count changes: every trainer's step under way would otherwise
 * run again at once — under SYNC without its contributions to the shards still waiting for it, so
 * they would wait out their hand-back bound. Its old owner refuses calls to it meanwhile (not
 * serving), which clients retry until the view at the new count comes.
 */
export function clusterViewOf(job: string, state: JobState, previous?: View): View {
  const view = currentViewOf(job, state);
  const live = state.liveReshape;
  if (!live || !previous || previous.shardCount !== view.shardCount) return view;
  for (const index of live.handedBack)
    if (index < view.shardCount && view.shards[index]!.address === '')
      view.shards[index] = { ...previous.shards[index]!, replicas: [] };
  return view;
}

function currentViewOf(job: string, state: JobState): View {
  const shardCount = state.desired ?? 0;
  const byIndex = new Map(
    state.assignments.filter((a) => isCurrentAssignment(a, state)).map((a) => [a.index, a]),
  );
  const pservers = new Map(state.pservers.map((p) => [`${p.member}\u0000${p.lease}`, p]));
  return {
    job,
    shardCount,
    blockSize: state.blockSize ?? 0,
    shards: Array.from({ length: shardCount }, (_, index) => {
      const a = byIndex.get(index);
      const announced = a && pservers.get(`${a.member}\u0000${a.lease}`)?.serving;
      return {
        index,
        address: a?.address ?? '',
        shardEpoch: a?.epoch ?? 0,
        member: a?.member ?? '',
        serving: announced?.index === index && announced.epoch === a?.epoch,
        replicas: state.replicaAssignments
          .filter((r) => a && r.index === index && r.primaryEpoch === a.epoch)
          .sort((x, y) => x.createRevision - y.createRevision)
          .map((r) => ({ member: r.member, address: r.address, inSync: r.inSync })),
      };
    }),
    revision: state.revision,
    initialized: state.initDone,
    replicas: state.replicas,
    consistency: consistencyMessage(state.consistency),
    finished: state.finished,
  };
}

/** Whether two views differ in anything a trainer acts on (the revision alone does not count). */
export function sameView(a: View, b: View): boolean {
  return JSON.stringify({ ...a, revision: 0 }) === JSON.stringify({ ...b, revision: 0 });
}
