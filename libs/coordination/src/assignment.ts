import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import type { Leader } from './election';
import type { JobState, RegisteredPserver } from './job-state';
import type { JobKeys } from './keys';

/** One index to give to one pserver. */
export interface PlannedAssignment {
  index: number;
  pserver: RegisteredPserver;
}

/**
 * Which free indices go to which waiting pservers: the lowest free index to the pserver that
 * registered first. A pserver already holding an index (under its current lease) gets none, so
 * extra pservers stay hot spares until an index frees.
 */
export function planAssignments(
  state: Pick<JobState, 'desired' | 'pservers' | 'assignments'>,
): PlannedAssignment[] {
  const desired = state.desired ?? 0;
  const taken = new Set(state.assignments.map((a) => a.index));
  const holding = new Set(state.assignments.map((a) => `${a.member}\u0000${a.lease}`));
  const free = Array.from({ length: desired }, (_, i) => i).filter((i) => !taken.has(i));
  const waiting = state.pservers
    .filter((p) => !holding.has(`${p.member}\u0000${p.lease}`))
    .sort((a, b) => a.createRevision - b.createRevision);
  return free.slice(0, waiting.length).map((index, k) => ({ index, pserver: waiting[k]! }));
}

/**
 * Gives a free index to a pserver in one transaction, guarded three ways: this master still
 * leads (its election key has the leader's create revision), the index is free, and the
 * pserver's registration is still alive under the lease the assignment is put under — so the
 * assignment dies with the pserver. A failed or unclear transaction is resolved by reading the
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
  const value = JSON.stringify({ member: pserver.member, address: pserver.address });
  try {
    const result = await client
      .if(leader.key, 'Create', '==', leader.revision)
      .and(key, 'Create', '==', 0)
      .and(keys.pserver(pserver.member), 'Lease', '==', pserver.lease)
      .then(client.put(key).value(value).lease(pserver.lease))
      .commit();
    if (result.succeeded) {
      logger.info('assigned a shard index', {
        index,
        member: pserver.member,
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
