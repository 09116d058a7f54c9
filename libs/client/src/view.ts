import type { ClusterView__Output, ConsistencyMode__Output } from '@pserver/proto';

/**
 * How the job's shards treat pushes and reads: applied on arrival (`async`), synchronous steps
 * (`sync`: a step's pushes are averaged, a read for step k waits for step k − 1), or bounded
 * staleness (`ssp`: a read waits until the slowest trainer is close enough).
 */
export type ConsistencyModeName = 'async' | 'sync' | 'ssp';

/** Where one shard is served now, and under which epoch. */
export interface ShardRoute {
  index: number;
  address: string;
  /** 0 while the index is unassigned. */
  epoch: number;
  /** Whether the pserver serves the shard (false while it recovers it): steps wait until it does. */
  serving: boolean;
}

/** The trainer's picture of the cluster (DESIGN section 2). */
export interface View {
  shardCount: number;
  blockSize: number;
  shards: ShardRoute[];
  /** Orders views: a higher revision is newer. */
  revision: number;
  initialized: boolean;
  /** The job's consistency mode. */
  consistency: ConsistencyModeName;
}

export function viewFromProto(view: ClusterView__Output): View {
  return {
    shardCount: view.shardCount,
    blockSize: view.blockSize,
    shards: view.shards.map((s) => ({
      index: s.index,
      address: s.address,
      epoch: s.shardEpoch,
      serving: s.serving,
    })),
    revision: view.revision,
    initialized: view.initialized,
    consistency: consistencyModeName(view.consistency?.mode),
  };
}

/** The client's name of a proto `ConsistencyMode` (ASYNC when unset). */
export function consistencyModeName(
  mode: ConsistencyMode__Output | undefined,
): ConsistencyModeName {
  return mode === 'CONSISTENCY_MODE_SYNC'
    ? 'sync'
    : mode === 'CONSISTENCY_MODE_BOUNDED_STALENESS'
      ? 'ssp'
      : 'async';
}

/** The indices whose pserver or epoch differs between two views. */
export function changedShards(before: View, after: View): number[] {
  const changed: number[] = [];
  for (let i = 0; i < Math.max(before.shards.length, after.shards.length); i++) {
    const a = before.shards[i];
    const b = after.shards[i];
    if (a?.address !== b?.address || a?.epoch !== b?.epoch) changed.push(i);
  }
  return changed;
}

/** Whether every index has a pserver that serves it: only then can a step run. */
export function complete(view: View): boolean {
  return (
    view.shardCount > 0 &&
    view.shards.length === view.shardCount &&
    view.shards.every((s) => s.address !== '' && s.epoch > 0 && s.serving)
  );
}
