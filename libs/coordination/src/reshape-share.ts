import type { Etcd3 } from 'etcd3';
import type { CheckpointMeta } from '@pserver/checkpoint';
import type { Logger } from '@pserver/logging';
import { CoordinationError } from './errors';
import type { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import { parseReshape } from './reshape';
import { TenureLostError, type Reshape } from './shard-tenure';

// A pserver's side of a reshape: the share of it its index has to restore, the mark that it did,
// and the source files it must keep while other indices may still read them.

/** The reshape index `index` has to restore its share of, with the record's create revision. */
export interface ReshapeShare {
  reshape: Reshape;
  revision: number;
}

/**
 * The pending reshape, read with this index's mark in one transaction, when the index has not
 * restored its share yet and is assigned under the reshape's count; undefined otherwise.
 */
export async function readReshapeShare(
  client: Etcd3,
  keys: JobKeys,
  index: number,
  shardCount: number,
): Promise<ReshapeShare | undefined> {
  const result = await client
    .if(keys.reshape, 'Version', '>', -1)
    .then(client.get(keys.reshape), client.get(keys.reshapeRestored(index)))
    .commit();
  const [record, mark] = result.responses.map((r) => r.response_range?.kvs[0]);
  if (!record || mark) return undefined;
  const reshape = parseRecord(record.value.toString());
  return reshape.to === shardCount
    ? { reshape, revision: Number(record.create_revision) }
    : undefined;
}

/**
 * Puts `reshape/restored/<index>` = `epoch` while `assign/<index>` is held under this lease with
 * this epoch (the fence of a checkpoint commit) and the reshape is still the one restored. An
 * unclear or failed transaction is read back: the mark there is success; the assignment gone
 * is `TenureLostError`; the reshape gone (an operator deleted it) leaves nothing to mark.
 */
export async function markRestored(
  client: Etcd3,
  keys: JobKeys,
  lease: LeaseKeeper,
  facts: { index: number; epoch: number },
  share: ReshapeShare,
  logger: Logger,
): Promise<void> {
  const { index, epoch } = facts;
  if (!lease.isValid()) throw new TenureLostError(index, 'its lease can no longer be trusted');
  const assign = keys.assign(index);
  const mark = keys.reshapeRestored(index);
  try {
    const result = await client
      .if(assign, 'Lease', '==', lease.id)
      .and(assign, 'Create', '==', epoch)
      .and(keys.reshape, 'Create', '==', share.revision)
      .then(client.put(mark).value(String(epoch)))
      .commit();
    if (result.succeeded) return;
  } catch (err) {
    logger.warn('marking the reshape restored failed or timed out; reading it back', { err });
  }
  const result = await client
    .if(assign, 'Version', '>', -1)
    .then(client.get(mark), client.get(assign), client.get(keys.reshape))
    .commit();
  const [marked, assigned, record] = result.responses.map((r) => r.response_range?.kvs[0]);
  if (marked?.value.toString() === String(epoch)) return;
  if (
    !assigned ||
    assigned.lease !== lease.id ||
    Number(assigned.create_revision) !== epoch ||
    !lease.isValid()
  )
    throw new TenureLostError(index, `assign/${index} is no longer held with epoch ${epoch}`);
  if (Number(record?.create_revision ?? 0) !== share.revision) {
    logger.warn('the reshape this index restored is no longer pending: nothing to mark', {
      index,
      epoch,
    });
    return;
  }
  // Neither written nor refused: etcd did not answer the transaction.
  throw new Error(`reshape/restored/${index}: etcd did not take the mark; try again`);
}

/**
 * The source checkpoint of `index` in the reshape pending now (read fresh), whose files the new
 * owner of the index must keep: every index of the new count may read its part of them until
 * the leader deletes the record. None when no reshape is pending or it has no source there.
 */
export async function reshapeFilesToKeep(
  client: Etcd3,
  keys: JobKeys,
  index: number,
): Promise<readonly CheckpointMeta[]> {
  const value = await client.get(keys.reshape).string();
  if (value === null) return [];
  const source = parseRecord(value).sources.get(index);
  return source ? [source] : [];
}

/** A record that cannot be read would lose the old checkpoints if ignored: refuse to go on. */
function parseRecord(value: string): Reshape {
  try {
    return parseReshape(value);
  } catch (err) {
    throw new CoordinationError(
      'CHECKPOINT_CORRUPT',
      `reshape: the record of the pending change of the shard count is unreadable (${(err as Error).message}); repair or delete it with etcdctl`,
    );
  }
}
