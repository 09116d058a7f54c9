import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import type { Leader } from './election';
import type {
  AssignmentValue,
  JobState,
  RegisteredPserver,
  ReplicaAssignment,
  ReplicaValue,
  ShardAssignment,
} from './job-state';
import type { JobKeys } from './keys';

/** One index to give to one pserver, with the shard count and block size it is assigned under. */
export interface PlannedAssignment {
  index: number;
  pserver: RegisteredPserver;
  shardCount: number;
  blockSize: number;
  /** The in-sync replica of the index this promotes (it serves at once, nothing restored). */
  promotes?: ReplicaAssignment;
}

/** A pserver to keep a copy of shard `index` for its primary of `primaryEpoch`. */
export interface PlannedReplica {
  index: number;
  primaryEpoch: number;
  pserver: RegisteredPserver;
}

const holderKey = (member: string, lease: string): string => `${member}\u0000${lease}`;

/** The pservers that hold neither an index nor a replica, first registered first. */
export function sparesOf(
  state: Pick<JobState, 'pservers' | 'assignments' | 'replicaAssignments'>,
): RegisteredPserver[] {
  const holding = new Set(
    [...state.assignments, ...state.replicaAssignments].map((a) => holderKey(a.member, a.lease)),
  );
  return state.pservers
    .filter((p) => !holding.has(holderKey(p.member, p.lease)))
    .sort((a, b) => a.createRevision - b.createRevision);
}

/**
 * Assignments written under another shard count or block size than the job's (the count changed
 * before initialization), or without them (an older master): each must be deleted and assigned
 * again, so that the new count comes with a new epoch of every index. None while the job has no
 * count or block size yet.
 */
export function staleAssignments(
  state: Pick<JobState, 'desired' | 'blockSize' | 'assignments'>,
): ShardAssignment[] {
  if (state.desired === undefined || state.blockSize === undefined) return [];
  return state.assignments.filter((a) => !isCurrentAssignment(a, state));
}

/** Whether `assignment` was written under the job's shard count and block size. */
export function isCurrentAssignment(
  assignment: ShardAssignment,
  state: Pick<JobState, 'desired' | 'blockSize'>,
): boolean {
  return assignment.shardCount === state.desired && assignment.blockSize === state.blockSize;
}

/**
 * Which free indices go to which pservers. An index with an in-sync replica goes to that replica
 * (a promotion: its copy holds every acknowledged push). The others go, lowest free index first,
 * to the spares that registered first: pservers holding neither an index nor a replica (under
 * their current lease), so extra pservers stay hot spares until an index frees. An index whose
 * key exists, stale or not, is not free: a stale one is deleted first (`retire`); nor is one
 * handed back for a live reshape. After a live change, an index whose receiver holds its share
 * (`reshape.moved`) goes to that receiver. An index whose owner died before handing it back is assigned
 * as ever (its replica promoted, or a spare restoring it), and that owner hands it back in turn.
 */
export function planAssignments(
  state: Pick<
    JobState,
    'desired' | 'blockSize' | 'pservers' | 'assignments' | 'replicaAssignments'
  > &
    Partial<Pick<JobState, 'liveReshape' | 'reshape'>>,
): PlannedAssignment[] {
  const { desired, blockSize } = state;
  if (desired === undefined || blockSize === undefined) return [];
  // An index handed back for a live reshape stays free: its final checkpoint is its state now.
  const taken = new Set([
    ...state.assignments.map((a) => a.index),
    ...(state.liveReshape?.handedBack ?? []),
  ]);
  const free = Array.from({ length: desired }, (_, i) => i).filter((i) => !taken.has(i));
  const planned: PlannedAssignment[] = [];
  const unpromoted: number[] = [];
  for (const index of free) {
    const replica = promotable(state, index);
    const pserver =
      replica &&
      state.pservers.find((p) => p.member === replica.member && p.lease === replica.lease);
    if (replica && pserver)
      planned.push({ index, pserver, shardCount: desired, blockSize, promotes: replica });
    else unpromoted.push(index);
  }
  // A live change's receiver holding an index's share in memory serves it: nothing restored.
  let spares = sparesOf(state);
  const moved = state.reshape?.to === desired ? state.reshape.moved : undefined;
  const restoring: number[] = [];
  for (const index of unpromoted) {
    const member = moved?.get(index);
    const pserver = member === undefined ? undefined : spares.find((p) => p.member === member);
    if (pserver) {
      planned.push({ index, pserver, shardCount: desired, blockSize });
      spares = spares.filter((p) => p !== pserver);
    } else restoring.push(index);
  }
  return [
    ...planned,
    ...restoring
      .slice(0, spares.length)
      .map((index, k) => ({ index, pserver: spares[k]!, shardCount: desired, blockSize })),
  ];
}

/**
 * The replica of a free index to promote: in sync, for the index's latest primary (every replica
 * key of an index is for its latest primary: each assignment deletes the older ones), the first
 * one made.
 */
function promotable(
  state: Pick<JobState, 'replicaAssignments'>,
  index: number,
): ReplicaAssignment | undefined {
  return state.replicaAssignments
    .filter((r) => r.index === index && r.inSync)
    .sort((a, b) => b.primaryEpoch - a.primaryEpoch || a.createRevision - b.createRevision)[0];
}

/**
 * Which spares become replicas: each current assignment gets copies from the spares left after
 * `planAssignments` until it has `state.replicas` of them for its epoch; shards in index order,
 * spares first registered first.
 */
export function planReplicas(
  state: Pick<
    JobState,
    'desired' | 'blockSize' | 'replicas' | 'pservers' | 'assignments' | 'replicaAssignments'
  > &
    Partial<Pick<JobState, 'liveReshape'>>,
  assigning: readonly PlannedAssignment[],
): PlannedReplica[] {
  // A shard being handed back for a live reshape gets no new copy: its state moves by checkpoint.
  if (state.replicas <= 0 || state.liveReshape) return [];
  const used = new Set(assigning.map((p) => holderKey(p.pserver.member, p.pserver.lease)));
  const spares = sparesOf(state).filter((p) => !used.has(holderKey(p.member, p.lease)));
  const planned: PlannedReplica[] = [];
  const assignments = state.assignments
    .filter((a) => isCurrentAssignment(a, state))
    .sort((a, b) => a.index - b.index);
  for (const a of assignments) {
    const have = state.replicaAssignments.filter(
      (r) => r.index === a.index && r.primaryEpoch === a.epoch,
    ).length;
    for (let k = have; k < state.replicas && spares.length > 0; k++)
      planned.push({ index: a.index, primaryEpoch: a.epoch, pserver: spares.shift()! });
  }
  return planned;
}

/**
 * Gives a free index to a pserver in one transaction, guarded four ways: this master still
 * leads (its election key has the leader's create revision), the index is free, the pserver's
 * registration is still alive under the lease the assignment is put under — so the assignment
 * dies with the pserver — and the job's shard count is still the one written into it. A failed or unclear transaction is resolved by reading the
 * key back, never by assigning again.
 */
export async function assign(
  client: Etcd3,
  keys: JobKeys,
  leader: Leader,
  planned: PlannedAssignment,
  logger: Logger,
): Promise<boolean> {
  const { index, pserver } = planned;
  const key = keys.assign(index);
  const assigned: AssignmentValue = {
    member: pserver.member,
    address: pserver.address,
    shardCount: planned.shardCount,
    blockSize: planned.blockSize,
  };
  const value = JSON.stringify(assigned);
  try {
    let txn = client
      .if(leader.key, 'Create', '==', leader.revision)
      .and(key, 'Create', '==', 0)
      .and(keys.pserver(pserver.member), 'Lease', '==', pserver.lease)
      // Planned from a state read before a SetDesiredShards: not under the count of now.
      .and(keys.desired, 'Value', '==', String(planned.shardCount));
    // A promotion: the replica is still the one seen, in sync.
    if (planned.promotes)
      txn = txn.and(
        keys.replica(index, planned.promotes.member),
        'Create',
        '==',
        planned.promotes.createRevision,
      );
    const result = await txn
      .then(
        client.put(key).value(value).lease(pserver.lease),
        // The replicas were the old primary's: each joins the new one afresh (or, promoted, is it).
        client.delete().prefix(keys.replicaPrefix(index)),
      )
      .commit();
    if (result.succeeded) {
      logger.info(planned.promotes ? 'promoted a replica' : 'assigned a shard index', {
        index,
        member: pserver.member,
        shardCount: planned.shardCount,
        epoch: Number(result.header.revision),
        ...(planned.promotes && { previousEpoch: planned.promotes.primaryEpoch }),
      });
      return true;
    }
  } catch (err) {
    logger.warn('assignment transaction failed or timed out; reading it back', {
      index,
      member: pserver.member,
      err,
    });
  }
  // The transaction may have committed and then been retried by the client, or failed a compare.
  const current = await client.get(key).exec();
  const kv = current.kvs[0];
  return kv !== undefined && kv.lease === pserver.lease && kv.value.toString() === value;
}

/**
 * Deletes a stale assignment (see `staleAssignments`) while this master leads, the key is still
 * the one seen (same create revision) and the job's shard count is still `desired` (the count it
 * was found stale under): its pserver loses the shard and waits for an index again, and the next
 * reconciliation assigns the index under the job's count, with a new epoch.
 */
export async function retire(
  client: Etcd3,
  keys: JobKeys,
  leader: Leader,
  stale: ShardAssignment,
  desired: number,
  logger: Logger,
): Promise<boolean> {
  const key = keys.assign(stale.index);
  try {
    const result = await client
      .if(leader.key, 'Create', '==', leader.revision)
      .and(key, 'Create', '==', stale.epoch)
      .and(keys.desired, 'Value', '==', String(desired))
      .then(client.delete().key(key), client.delete().prefix(keys.replicaPrefix(stale.index)))
      .commit();
    if (result.succeeded)
      logger.info('retired an assignment made under another shard count', {
        index: stale.index,
        member: stale.member,
        epoch: stale.epoch,
        shardCount: stale.shardCount,
      });
    return result.succeeded;
  } catch (err) {
    // Deleting twice is harmless (the compare fails): the next state decides again.
    logger.warn('retiring an assignment failed or timed out', { index: stale.index, err });
    return false;
  }
}

/**
 * Makes a spare a replica of shard `index` in one transaction: while this master leads, the
 * shard's primary is still the one of `primaryEpoch`, the spare's registration is alive under the
 * lease the key is put under (so the replica key dies with the replica) and it is not yet this
 * shard's replica. An unclear transaction is read back.
 */
export async function assignReplica(
  client: Etcd3,
  keys: JobKeys,
  leader: Leader,
  planned: PlannedReplica,
  logger: Logger,
): Promise<boolean> {
  const { index, primaryEpoch, pserver } = planned;
  const key = keys.replica(index, pserver.member);
  const value: ReplicaValue = { member: pserver.member, address: pserver.address, primaryEpoch };
  try {
    const result = await client
      .if(leader.key, 'Create', '==', leader.revision)
      .and(keys.assign(index), 'Create', '==', primaryEpoch)
      .and(keys.pserver(pserver.member), 'Lease', '==', pserver.lease)
      .and(key, 'Create', '==', 0)
      .then(client.put(key).value(JSON.stringify(value)).lease(pserver.lease))
      .commit();
    if (result.succeeded) {
      logger.info('assigned a replica', { index, member: pserver.member, primaryEpoch });
      return true;
    }
  } catch (err) {
    logger.warn('replica assignment failed or timed out; reading it back', {
      index,
      member: pserver.member,
      err,
    });
  }
  const current = await client.get(key).exec();
  const kv = current.kvs[0];
  return kv !== undefined && kv.lease === pserver.lease;
}
