import { EtcdLeaseInvalidError, type Etcd3 } from 'etcd3';
import type { CheckpointMeta } from '@pserver/checkpoint';
import type { Logger } from '@pserver/logging';
import type { Leader } from './election';
import { CoordinationError } from './errors';
import type { JobState } from './job-state';
import type { JobKeys } from './keys';
import {
  encodeReceiver,
  movedShares,
  parseFinalSeq,
  parseReceiver,
  planReceivers,
} from './live-move';
import { onKey, onPrefix, rangeTxn } from './range-txn';
import {
  encodeLiveReshape,
  encodeReshape,
  indexList,
  maxValueBytes,
  notHandedBack,
  sourceMeta,
  unrestoredIndices,
  type LiveReshape,
  type PendingReshape,
} from './reshape';

/** What a leader's reshape writes need: its client, the job's keys and its term. */
export interface TermWrites {
  client: Etcd3;
  keys: JobKeys;
  leader: Leader;
}

/** Transactions that fail a compare before the change is given up as raced (each re-reads). */
const attempts = 3;
/** Checkpoint metas read at once. */
const readsInFlight = 64;

/**
 * Why the initialized job's shard count may not change to `count` now, or undefined when it
 * may: an earlier change is still pending, or a pserver still holds a shard or a replica (the
 * job must be down: a live shard would go on serving, and committing, under the old count).
 */
export function reshapeRefusal(count: number, state: JobState): CoordinationError | undefined {
  if (state.corruptReshape !== undefined)
    return new CoordinationError(
      'MASTER_RESHAPE_PENDING',
      `shardCount: a change of the count is pending, but its record (the job's \`reshape\` key) is unreadable: ${state.corruptReshape}; repair or delete it with etcdctl first`,
    );
  if (state.liveReshape) return liveReshapePending(count, state.liveReshape);
  if (state.reshape) {
    const { from, to } = state.reshape;
    const waiting = unrestoredIndices(state.reshape);
    return new CoordinationError(
      'MASTER_RESHAPE_PENDING',
      `shardCount: the change from ${from} to ${to} shards is still pending: ${waiting.length === 1 ? 'index' : 'indices'} ${indexList(waiting)} of ${to} have not restored their share of the old checkpoints; start ${to} pservers and let them restore before changing the count to ${count}`,
    );
  }
  const live = [
    ...[...state.assignments]
      .sort((a, b) => a.index - b.index)
      .map((a) => `${a.index} (${a.member})`),
    ...state.replicaAssignments.map((r) => `a replica of ${r.index} (${r.member})`),
  ];
  if (live.length > 0)
    return new CoordinationError(
      'MASTER_SHARDS_IN_USE',
      `shardCount: the parameters are initialized, so the count changes only while the job is down, and pservers still hold shards ${live.slice(0, 10).join(', ')}${live.length > 10 ? ` and ${live.length - 10} more` : ''}; stop them first`,
    );
  return undefined;
}

function liveReshapePending(count: number, live: LiveReshape): CoordinationError {
  const waiting = notHandedBack(live);
  return new CoordinationError(
    'MASTER_RESHAPE_PENDING',
    `shardCount: the change from ${live.from} to ${live.to} shards is under way: ${waiting.length === 0 ? 'every index was handed back and the new count is being set' : `${waiting.length === 1 ? 'index' : 'indices'} ${indexList(waiting)} of ${live.from} have not been handed back yet`}; let it finish before changing the count to ${count}`,
  );
}

/**
 * Asks a running initialized job to change its shard count to `count`: puts `reshape/live`
 * (`{from, to}`), guarded by the term, while the count is still the one read and no change is
 * pending, with the receiver of each new index (`planReceivers`: it copies that index's slices
 * from the primaries while they serve, and follows their pushes). Every primary then commits a
 * final checkpoint and hands its index back (`reshape/handed-back/<i>`, and `reshape/final-seq/<i>`
 * naming the receivers that hold its last push); `completeLiveReshape` turns the last hand-back
 * into the change made while the job is down (`beginReshape`), and the pservers, spares again,
 * take up the new count: a receiver holding its index's whole share serves it from memory, the
 * other indices restore theirs from the final checkpoints. Asking again for the same count while it is under way is no change.
 */
export async function askLiveReshape(
  term: TermWrites,
  count: number,
  readState: () => Promise<JobState>,
  initial: JobState,
): Promise<void> {
  const { client, keys, leader } = term;
  let state = initial;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (state.liveReshape?.to === count) return;
    const from = state.desired;
    if (from === count) return;
    if (from === undefined)
      throw new CoordinationError(
        'MASTER_PLACEMENT_FIXED',
        'shardCount: the job is initialized but has no shard count (config/desired)',
      );
    if (state.liveReshape) throw liveReshapePending(count, state.liveReshape);
    if (state.reshape || state.corruptReshape !== undefined) throw reshapeRefusal(count, state)!;
    const receivers = [...planReceivers(state, count)].map(([index, receiver]) =>
      client.put(keys.receiver(index)).value(encodeReceiver(receiver)).lease(receiver.lease),
    );
    let result;
    try {
      result = await client
        .if(leader.key, 'Create', '==', leader.revision)
        .and(keys.initDone, 'Create', '>', 0)
        .and(keys.desired, 'Value', '==', from)
        .and(keys.reshape, 'Create', '==', 0)
        .and(keys.liveReshape, 'Create', '==', 0)
        .then(
          // The last change, completed, deleted the receiver keys (etcd refuses a transaction
          // that deletes and puts one key).
          ...[
            keys.handedBackPrefix,
            keys.lastStepPrefix,
            keys.copiedPrefix,
            keys.caughtUpPrefix,
            keys.finalSeqPrefix,
          ].map((prefix) => client.delete().prefix(prefix)),
          client.delete().key(keys.moveDecision),
          client.put(keys.liveReshape).value(encodeLiveReshape({ from, to: count })),
          ...receivers,
        )
        .commit();
    } catch (err) {
      // A receiver's lease ended since the state was read: plan again without it.
      if (!(err instanceof EtcdLeaseInvalidError)) throw err;
      state = await readState();
      continue;
    }
    if (result.succeeded) return;
    if (!(await leads(term)))
      throw new CoordinationError(
        'MASTER_NOT_LEADER',
        'SetDesiredShards: this master no longer leads; ask again',
      );
    state = await readState();
  }
  throw new CoordinationError(
    'MASTER_NOT_LEADER',
    `SetDesiredShards: the job's state changed ${attempts} times while the count was being changed (another write raced); ask again`,
  );
}

/**
 * Once every old index was handed back and no pserver holds a shard or a replica, makes the
 * change of the live reshape as for a job that is down (`beginReshape`), deleting `reshape/live`
 * and its marks in the same transaction. False when it is not time yet or another write raced
 * (the next state decides again).
 */
export async function completeLiveReshape(
  term: TermWrites,
  readState: () => Promise<JobState>,
  state: JobState,
  logger: Logger,
): Promise<boolean> {
  const live = state.liveReshape;
  if (!live || notHandedBack(live).length > 0) return false;
  if (state.assignments.length > 0 || state.replicaAssignments.length > 0) return false;
  try {
    await beginReshape(term, live.to, readState, state, live);
    logger.info('every index was handed back: the shard count changes', {
      from: live.from,
      to: live.to,
    });
    return true;
  } catch (err) {
    logger.warn('changing the shard count after the hand-backs failed; trying again', { err });
    return false;
  }
}

/**
 * Changes an initialized job's shard count from `state.desired` to `count` while it is down: one
 * transaction, guarded by the term, that puts `config/desired`, puts the `reshape` record with
 * each old index's latest checkpoint meta, and deletes every key under `ckpt/` — the new count's
 * indices start with no checkpoint of their own, and an old index's metas are never mistaken for
 * the new count's. It commits only while the parameters are initialized, the count is still the
 * one read, no index or replica is assigned, no reshape is pending, and no checkpoint key changed
 * since the metas were read. A failed compare is explained from a fresh state, or tried again.
 */
export async function beginReshape(
  term: TermWrites,
  count: number,
  readState: () => Promise<JobState>,
  initial: JobState,
  /** The live reshape this change completes: its record and marks go in the same transaction. */
  live?: LiveReshape,
): Promise<void> {
  const { client, keys, leader } = term;
  let state = initial;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const from = state.desired;
    if (from === count) return;
    if (from === undefined)
      throw new CoordinationError(
        'MASTER_PLACEMENT_FIXED',
        'shardCount: the job is initialized but has no shard count (config/desired)',
      );
    const refusal = reshapeRefusal(count, { ...state, liveReshape: undefined });
    if (refusal) throw refusal;
    if (state.liveReshape?.revision !== live?.revision)
      throw new CoordinationError(
        'MASTER_RESHAPE_PENDING',
        'shardCount: a change of the count asked while the job ran began or ended meanwhile; ask again',
      );
    // At once: a live change's, after the last hand-back, is part of the trainers' write pause.
    const [{ sources, revision }, moved] = await Promise.all([
      latestCheckpoints(term, from),
      live ? movedByReceivers(term, from) : undefined,
    ]);
    const record = encodeReshape({ from, to: count, sources, moved });
    const bytes = Buffer.byteLength(record);
    if (bytes > maxValueBytes)
      throw new CoordinationError(
        'MASTER_PLACEMENT_FIXED',
        `shardCount: the record of the latest checkpoints of ${sources.size} of ${from} shards would take ${bytes} bytes, above the ${maxValueBytes} bytes one etcd value of the job may hold: a job this large cannot change its shard count`,
      );
    const compare = [
      onKey(leader.key, 'Create', '==', leader.revision),
      onKey(keys.initDone, 'Create', '>', 0),
      onKey(keys.desired, 'Value', '==', from),
      onKey(keys.reshape, 'Create', '==', 0),
      onPrefix(keys.reshapeRestoredPrefix, 'Create', '==', 0),
      onPrefix(keys.assignPrefix, 'Create', '==', 0),
      onPrefix(keys.replicaRoot, 'Create', '==', 0),
      onKey(keys.liveReshape, 'Create', '==', live?.revision ?? 0),
      // Every checkpoint key as read: a commit or a new key since fails the compare.
      onPrefix(keys.checkpointRoot, 'Mod', '<', revision + 1),
    ];
    const operations = [
      client.put(keys.desired).value(String(count)),
      client.put(keys.reshape).value(record),
      client.delete().prefix(keys.checkpointRoot),
      ...(live ? liveKeysDeleted(term) : []),
    ];
    let succeeded: boolean;
    try {
      succeeded = (await rangeTxn(client, compare, operations)).succeeded;
    } catch {
      // etcd3 retries an unanswered call: it may have committed. Ours, if the record is there.
      succeeded = (await client.get(keys.reshape).string()) === record;
      if (!succeeded) throw notAnswered();
    }
    if (succeeded) return;
    if (!(await leads(term)))
      throw new CoordinationError(
        'MASTER_NOT_LEADER',
        'SetDesiredShards: this master no longer leads; ask again',
      );
    state = await readState();
  }
  throw new CoordinationError(
    'MASTER_NOT_LEADER',
    `SetDesiredShards: the job's assignments or checkpoints changed ${attempts} times while the count was being changed (another write raced); ask again`,
  );
}

/**
 * Ends a reshape once every index of the new count restored its share: deletes `reshape` and
 * every `reshape/restored/<i>` in one transaction, guarded by the term and the record's create
 * revision. False when it is not complete, or the transaction did not commit (the next state
 * decides again).
 */
export async function finishReshape(
  term: TermWrites,
  reshape: PendingReshape,
  logger: Logger,
): Promise<boolean> {
  if (unrestoredIndices(reshape).length > 0) return false;
  const { client, keys, leader } = term;
  try {
    const result = await client
      .if(leader.key, 'Create', '==', leader.revision)
      .and(keys.reshape, 'Create', '==', reshape.revision)
      .then(client.delete().key(keys.reshape), client.delete().prefix(keys.reshapeRestoredPrefix))
      .commit();
    if (result.succeeded)
      logger.info('every index restored its share of the old checkpoints: the reshape is done', {
        from: reshape.from,
        to: reshape.to,
      });
    return result.succeeded;
  } catch (err) {
    logger.warn('ending the reshape failed or timed out', { err });
    return false;
  }
}

/**
 * Ends a live change an old primary decided to roll back (`reshape/decision` with `go` false: a
 * receiver did not copy and catch up within the primaries' bound): deletes `reshape/live` and
 * every key beside it in one transaction, guarded by the term and the change's create revision,
 * leaving the count as it was: every primary follows the decision and serves on, none hands
 * back. False when it is not rolled back, or the transaction did not commit (the next state
 * decides again).
 */
export async function rollBackLiveReshape(
  term: TermWrites,
  state: JobState,
  logger: Logger,
): Promise<boolean> {
  const live = state.liveReshape;
  if (!live?.decision || live.decision.go) return false;
  const { client, keys, leader } = term;
  try {
    const result = await client
      .if(leader.key, 'Create', '==', leader.revision)
      .and(keys.liveReshape, 'Create', '==', live.revision)
      .then(...liveKeysDeleted(term))
      .commit();
    if (result.succeeded)
      logger.warn(
        `the change of the shard count from ${live.from} to ${live.to} was rolled back: ${live.decision.reason}; the job serves on at ${live.from}`,
        { from: live.from, to: live.to, decidedBy: live.decision.index },
      );
    return result.succeeded;
  } catch (err) {
    logger.warn('rolling the change of the shard count back failed or timed out', { err });
    return false;
  }
}

/** Deletes `reshape/live` and every key a live change adds beside it. */
function liveKeysDeleted({ client, keys }: TermWrites) {
  return [
    client.delete().key(keys.liveReshape),
    client.delete().key(keys.moveDecision),
    ...[
      keys.handedBackPrefix,
      keys.lastStepPrefix,
      keys.copiedPrefix,
      keys.caughtUpPrefix,
      keys.receiverPrefix,
      keys.finalSeqPrefix,
    ].map((prefix) => client.delete().prefix(prefix)),
  ];
}

/**
 * The indices of the new count whose receiver holds every old index's last push, as the old
 * primaries said when they handed back (`movedShares`).
 */
async function movedByReceivers(term: TermWrites, from: number): Promise<Map<number, string>> {
  const { client, keys } = term;
  const [receivers, finals] = await Promise.all([
    client.getAll().prefix(keys.receiverPrefix).strings(),
    client.getAll().prefix(keys.finalSeqPrefix).strings(),
  ]);
  const byIndex = <T>(
    values: Record<string, string>,
    prefix: string,
    parse: (v: string) => T | undefined,
  ) => {
    const parsed = new Map<number, T>();
    for (const [key, value] of Object.entries(values)) {
      const index = keys.indexUnder(prefix, key);
      const item = parse(value);
      if (index !== undefined && item !== undefined) parsed.set(index, item);
    }
    return parsed;
  };
  return movedShares(
    from,
    byIndex(receivers, keys.receiverPrefix, parseReceiver),
    byIndex(finals, keys.finalSeqPrefix, parseFinalSeq),
  );
}

/**
 * The latest checkpoint meta of each index below `from` (an index that never committed one has
 * none), all as of one revision, which they are compared against: one transaction reads the first
 * `readsInFlight` and fixes the revision, the rest are read at it, `readsInFlight` at once (a
 * transaction holds only so many operations). A meta that is not one refuses the change: its
 * index's share could not be restored.
 */
async function latestCheckpoints(
  term: TermWrites,
  from: number,
): Promise<{ sources: Map<number, CheckpointMeta>; revision: number }> {
  const { client, keys } = term;
  const indices = Array.from({ length: from }, (_, index) => index);
  const first = indices.slice(0, readsInFlight);
  const read = await client
    .if(keys.checkpointRoot, 'Version', '>', -1)
    .then(...first.map((index) => client.get(keys.checkpointLatest(index))))
    .commit();
  const revision = Number(read.header.revision);
  const values = new Map<number, string | null>(
    first.map((index, k) => [
      index,
      read.responses[k]?.response_range?.kvs[0]?.value.toString() ?? null,
    ]),
  );
  for (let start = readsInFlight; start < indices.length; start += readsInFlight) {
    const chunk = indices.slice(start, start + readsInFlight);
    const chunkValues = await Promise.all(
      chunk.map((index) => client.get(keys.checkpointLatest(index)).revision(revision).string()),
    );
    chunk.forEach((index, k) => values.set(index, chunkValues[k] ?? null));
  }
  const sources = new Map<number, CheckpointMeta>();
  for (const [index, value] of values)
    if (value !== null) sources.set(index, latestMeta(index, value));
  return { sources, revision };
}

function latestMeta(index: number, value: string): CheckpointMeta {
  try {
    return sourceMeta(index, JSON.parse(value));
  } catch (err) {
    throw new CoordinationError(
      'CHECKPOINT_CORRUPT',
      `shardCount: ckpt/${index}/latest is not a checkpoint meta of index ${index} (${(err as Error).message}); the count cannot change until index ${index} commits a good checkpoint`,
    );
  }
}

async function leads(term: TermWrites): Promise<boolean> {
  const kv = (await term.client.get(term.leader.key).exec()).kvs[0];
  return kv !== undefined && Number(kv.create_revision) === term.leader.revision;
}

function notAnswered(): CoordinationError {
  return new CoordinationError(
    'MASTER_NOT_LEADER',
    'SetDesiredShards: etcd did not answer the change, and it did not commit; ask again',
  );
}
