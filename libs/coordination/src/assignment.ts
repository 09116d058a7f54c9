import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import type { Leader } from './election';
import type { AssignmentValue, JobState, RegisteredPserver, ShardAssignment } from './job-state';
import type { JobKeys } from './keys';

/** One index to give to one pserver, with the shard count and block size it is assigned under. */
export interface PlannedAssignment {
  index: number;
  pserver: RegisteredPserver;
  shardCount: number;
  blockSize: number;
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
 * Which free indices go to which waiting pservers: the lowest free index to the pserver that
 * registered first. A pserver already holding an index (under its current lease) gets none, so
 * extra pservers stay hot spares until an index frees. An index whose key exists, stale or not,
 * is not free: a stale one is deleted first (`retire`).
 */
export function planAssignments(
  state: Pick<JobState, 'desired' | 'blockSize' | 'pservers' | 'assignments'>,
): PlannedAssignment[] {
  const { desired, blockSize } = state;
  if (desired === undefined || blockSize === undefined) return [];
  const taken = new Set(state.assignments.map((a) => a.index));
  const holding = new Set(state.assignments.map((a) => `${a.member}\u0000${a.lease}`));
  const free = Array.from({ length: desired }, (_, i) => i).filter((i) => !taken.has(i));
  const waiting = state.pservers
    .filter((p) => !holding.has(`${p.member}\u0000${p.lease}`))
    .sort((a, b) => a.createRevision - b.createRevision);
  return free
    .slice(0, waiting.length)
    .map((index, k) => ({ index, pserver: waiting[k]!, shardCount: desired, blockSize }));
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
    const result = await client
      .if(leader.key, 'Create', '==', leader.revision)
      .and(key, 'Create', '==', 0)
      .and(keys.pserver(pserver.member), 'Lease', '==', pserver.lease)
      // Planned from a state read before a SetDesiredShards: not under the count of now.
      .and(keys.desired, 'Value', '==', String(planned.shardCount))
      .then(client.put(key).value(value).lease(pserver.lease))
      .commit();
    if (result.succeeded) {
      logger.info('assigned a shard index', {
        index,
        member: pserver.member,
        shardCount: planned.shardCount,
        epoch: Number(result.header.revision),
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
      .then(client.delete().key(key))
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
