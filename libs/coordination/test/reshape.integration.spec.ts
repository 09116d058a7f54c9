import type { Etcd3 } from 'etcd3';
import { checksumAlgorithm, metaToJson, type CheckpointMeta } from '@pserver/checkpoint';
import { silentLogger } from '@pserver/logging';
import { startEtcd, type EtcdServer } from '@pserver/testing';
import {
  assign,
  ClusterMember,
  completeLiveReshape,
  connectEtcd,
  finishReshape,
  JobKeys,
  LeaderElection,
  LeaseKeeper,
  MasterTerm,
  planAssignments,
  readJobState,
  rollBackLiveReshape,
  TenureLostError,
  type EtcdShardTenure,
  type Leader,
  type TermWrites,
} from '../src';

// A change of an initialized job's shard count while it is down (a reshape), against a real
// etcd: the master's guarded transaction and its refusals, a new index's tenure with the share
// it has to restore, the fenced mark that it did, and the leader ending the reshape.
let etcd: EtcdServer;
let client: Etcd3;
let jobNumber = 0;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  etcd = await startEtcd();
  client = connectEtcd({ endpoints: [etcd.endpoint] });
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  client?.close();
  await etcd?.stop();
});

/** A checkpoint meta of `index`; `chainFiles` makes it a delta on that many files (a larger value). */
const meta = (index: number, seq: number, chainFiles = 0): CheckpointMeta => ({
  uuid: `u${index}-${seq}`,
  path: `shard-${index}/e5-s${seq}-u${index}.ckpt`,
  size: 1000 + seq,
  checksumAlgorithm,
  checksum: '0a0b0c0d',
  timestampNs: '1700000000123456789',
  shardEpoch: 5,
  index,
  seq,
  updatesApplied: seq,
  formatVersion: 1,
  chain: Array.from({ length: chainFiles }, (_, k) => ({
    uuid: `chain-${index}-${k}-0123456789abcdef0123456789abcdef`,
    path: `shard-${index}/e5-s${k}-chain-${index}-${k}-0123456789abcdef0123456789abcdef.ckpt`,
    size: 123_456_789,
    checksum: '0a0b0c0d',
  })),
});

interface Job {
  keys: JobKeys;
  leader: Leader;
  term: MasterTerm;
  writes: TermWrites;
}

/**
 * A job of `count` shards, led by a master of this test: its parameters initialized unless
 * `initialized` is false, and `committed` indices with a latest checkpoint, its history and the
 * epoch that served it last.
 */
async function job(
  count: number,
  committed: number[],
  options: { initialized?: boolean; chainFiles?: number } = {},
): Promise<Job> {
  const keys = new JobKeys(`reshape-${process.pid}-${++jobNumber}`);
  await client.put(keys.desired).value(String(count));
  await client.put(keys.blockSize).value('8');
  if (options.initialized !== false) {
    await client.put(keys.initOwner).value('1');
    await client.put(keys.initDone).value('1');
  }
  for (const index of committed) {
    const json = (seq: number): string =>
      JSON.stringify(metaToJson(meta(index, seq, options.chainFiles)));
    await client.put(keys.checkpointLatest(index)).value(json(3));
    await client.put(keys.checkpointHistory(index, 5, 2)).value(json(2));
    await client.put(keys.checkpointHistory(index, 5, 3)).value(json(3));
    await client.put(keys.lastServed(index)).value('5');
  }
  const lease = await LeaseKeeper.grant(client, { ttlSeconds: 5, logger: silentLogger });
  cleanups.push(() => lease.revoke());
  const leader = await new LeaderElection(
    client,
    keys.electionPrefix,
    lease,
    'm',
    silentLogger,
  ).campaign(new AbortController().signal);
  return {
    keys,
    leader,
    term: new MasterTerm(client, keys, leader),
    writes: { client, keys, leader },
  };
}

/** Registers a pserver of the job (left when the test ends). */
async function join(keys: JobKeys, member: string): Promise<ClusterMember> {
  const joined = await ClusterMember.connect({
    endpoints: [etcd.endpoint],
    job: keys.job,
    member,
    leaseTtlSeconds: 2,
    logger: silentLogger,
  });
  cleanups.push(() => joined.leave().catch(() => undefined));
  await joined.register(`${member}:1`);
  return joined;
}

/** One reconciliation: free indices to the spares. */
async function reconcile({ keys, leader }: Job): Promise<void> {
  for (const planned of planAssignments(await readJobState(client, keys)))
    await assign(client, keys, leader, planned, silentLogger);
}

async function primary(member: ClusterMember): Promise<EtcdShardTenure> {
  const role = await member.nextRole(AbortSignal.timeout(10_000));
  if (role.kind !== 'primary') throw new Error(`expected a primary role, got a ${role.kind}`);
  cleanups.push(() => role.tenure.close());
  return role.tenure;
}

const ckptKeys = (keys: JobKeys): Promise<string[]> =>
  client.getAll().prefix(keys.checkpointRoot).keys();

describe('changing the shard count of an initialized job', () => {
  it('of a running job asks its primaries to hand their shards back, also from a state read before it ran; the last hand-back makes the change', async () => {
    const j = await job(2, [0, 1]);
    const before = await readJobState(client, j.keys);
    const a = await join(j.keys, 'ps-a');
    const b = await join(j.keys, 'ps-b');
    await reconcile(j);
    const tenures = [await primary(a), await primary(b)];
    // The state said the job was down: the transaction's compare refuses, and the change is
    // asked of the running job instead.
    await j.term.setDesired(3, before);
    expect(await client.get(j.keys.desired).string()).toBe('2');
    expect(await client.get(j.keys.reshape).exists()).toBe(false);
    expect(await ckptKeys(j.keys)).toHaveLength(8);
    const asked = await readJobState(client, j.keys);
    expect(asked.liveReshape).toMatchObject({ from: 2, to: 3, handedBack: [] });
    // The same count again is no change; another is refused while this one is under way.
    await j.term.setDesired(3, asked);
    await expect(j.term.setDesired(4, asked)).rejects.toMatchObject({
      code: 'MASTER_RESHAPE_PENDING',
      message: expect.stringContaining(
        'the change from 2 to 3 shards is under way: indices 0, 1 of 2 have not been handed back yet',
      ),
    });
    // Each primary hears of it and hands its index back: the assignment goes, the mark stays.
    const told = await Promise.all(
      tenures.map((t) => new Promise<number>((resolve) => void t.onHandBackAsked(resolve))),
    );
    expect(told).toEqual([3, 3]);
    // SYNC: the primaries agree on the last step they all close — the highest either put — and
    // one that put its step waits for the other's.
    const first = tenures[0]!.agreeOnLastStep(7, AbortSignal.timeout(10_000));
    await expect(tenures[1]!.agreeOnLastStep(9, AbortSignal.timeout(10_000))).resolves.toBe(9);
    await expect(first).resolves.toBe(9);
    // Without the other's, it waits until its bound.
    await client.delete().key(j.keys.lastStep(1));
    await expect(tenures[0]!.agreeOnLastStep(7, AbortSignal.timeout(600))).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    // A live move: the receivers hold the whole job only when every primary says they hold its
    // shard; one that says not makes every primary write its final checkpoint.
    const whole = tenures[0]!.agreeOnWholeMove(true, AbortSignal.timeout(10_000));
    await expect(tenures[1]!.agreeOnWholeMove(false, AbortSignal.timeout(10_000))).resolves.toBe(
      false,
    );
    await expect(whole).resolves.toBe(false);
    await expect(tenures[1]!.agreeOnWholeMove(true, AbortSignal.timeout(10_000))).resolves.toBe(
      true,
    );
    // The copies, agreed on while serving: one that says no is enough, and the state says who said yes.
    await expect(tenures[0]!.agreeOnCopies(false, AbortSignal.timeout(10_000))).resolves.toBe(
      false,
    );
    await expect(tenures[1]!.agreeOnCopies(true, AbortSignal.timeout(10_000))).resolves.toBe(false);
    expect((await readJobState(client, j.keys)).liveReshape).toMatchObject({
      copied: [1],
      caughtUp: [0, 1],
    });
    await tenures[0]!.handBack();
    const half = await readJobState(client, j.keys);
    expect(half.liveReshape?.handedBack).toEqual([0]);
    expect(half.assignments.map((x) => x.index)).toEqual([1]);
    // An index handed back is not assigned again meanwhile.
    expect(planAssignments(half)).toEqual([]);
    expect(
      await completeLiveReshape(j.writes, () => readJobState(client, j.keys), half, silentLogger),
    ).toBe(false);
    await tenures[1]!.handBack();
    // A tenure that handed back holds nothing: a second hand-back is refused.
    await expect(tenures[1]!.handBack()).rejects.toBeInstanceOf(TenureLostError);
    await expect(tenures[1]!.agreeOnLastStep(9, AbortSignal.timeout(10_000))).rejects.toThrow();
    const all = await readJobState(client, j.keys);
    expect(all.liveReshape?.handedBack).toEqual([0, 1]);
    expect(all.assignments).toEqual([]);
    expect(
      await completeLiveReshape(j.writes, () => readJobState(client, j.keys), all, silentLogger),
    ).toBe(true);
    const after = await readJobState(client, j.keys);
    expect(after.desired).toBe(3);
    expect(after.liveReshape).toBeUndefined();
    expect(after.reshape).toMatchObject({ from: 2, to: 3, restored: [] });
    expect([...after.reshape!.sources.keys()]).toEqual([0, 1]);
    expect(await client.getAll().prefix(j.keys.handedBackPrefix).keys()).toEqual([]);
    expect(await client.getAll().prefix(j.keys.lastStepPrefix).keys()).toEqual([]);
    expect(await ckptKeys(j.keys)).toEqual([]);
  });

  it('rolls a live change back: the first decision stands for every primary, the leader ends the change at the old count, and a change asked again is told anew', async () => {
    const j = await job(2, [0, 1]);
    const a = await join(j.keys, 'ps-a');
    const b = await join(j.keys, 'ps-b');
    await reconcile(j);
    const tenures = [await primary(a), await primary(b)];
    await j.term.setDesired(3, await readJobState(client, j.keys));
    const revision = (await readJobState(client, j.keys)).liveReshape!.revision;
    const told = await Promise.all(
      tenures.map(
        (t) => new Promise<number>((resolve) => void t.onHandBackAsked((_to, r) => resolve(r))),
      ),
    );
    expect(told).toEqual([revision, revision]);
    // One primary's receiver is not ready: its decision, put first, stands for the other too.
    const no = { go: false, reason: 'receiver ps-c of old shard 1 did not catch up', index: 1 };
    await expect(tenures[1]!.decideMove(no)).resolves.toEqual(no);
    await expect(tenures[0]!.decideMove({ go: true, reason: '', index: 0 })).resolves.toEqual(no);
    const decided = await readJobState(client, j.keys);
    expect(decided.liveReshape?.decision).toEqual(no);
    // The leader ends the change: no live key left, the count and the assignments as they were.
    expect(await rollBackLiveReshape(j.writes, decided, silentLogger)).toBe(true);
    const after = await readJobState(client, j.keys);
    expect(after.liveReshape).toBeUndefined();
    expect(after.desired).toBe(2);
    expect(after.assignments.map((x) => x.index).sort()).toEqual([0, 1]);
    expect(await client.getAll().prefix(`${j.keys.root}reshape/`).keys()).toEqual([]);
    // Once the change is gone, a primary that decides does not go on.
    await expect(tenures[0]!.decideMove({ go: true, reason: '', index: 0 })).resolves.toMatchObject(
      { go: false },
    );
    // Asked again: told to a primary that listens for a change after the one rolled back.
    const again = new Promise<number>(
      (resolve) => void tenures[0]!.onHandBackAsked((_to, r) => resolve(r), revision),
    );
    await j.term.setDesired(3, after);
    const next = (await readJobState(client, j.keys)).liveReshape!.revision;
    expect(next).toBeGreaterThan(revision);
    await expect(again).resolves.toBe(next);
    // A go, decided first, stands the same way.
    const go = { go: true, reason: '', index: 0 };
    await expect(tenures[0]!.decideMove(go)).resolves.toEqual(go);
    await expect(tenures[1]!.decideMove(no)).resolves.toEqual(go);
    expect(
      await rollBackLiveReshape(j.writes, await readJobState(client, j.keys), silentLogger),
    ).toBe(false);
  });

  it('before initialization changes only the count: no record, the checkpoint keys stay', async () => {
    const j = await job(2, [0], { initialized: false });
    await j.term.setDesired(3, await readJobState(client, j.keys));
    expect(await client.get(j.keys.desired).string()).toBe('3');
    expect(await client.get(j.keys.reshape).exists()).toBe(false);
    expect(await ckptKeys(j.keys)).toHaveLength(4);
  });

  it('when down: records each old index’s latest meta, sets the count, deletes every ckpt/ key; a second change is refused while pending', async () => {
    const j = await job(3, [0, 2]);
    // The same count: nothing happens.
    await j.term.setDesired(3, await readJobState(client, j.keys));
    expect(await client.get(j.keys.reshape).exists()).toBe(false);
    expect(await ckptKeys(j.keys)).toHaveLength(8);

    await j.term.setDesired(2, await readJobState(client, j.keys));
    expect(await client.get(j.keys.desired).string()).toBe('2');
    expect(JSON.parse((await client.get(j.keys.reshape).string())!)).toEqual({
      from: 3,
      to: 2,
      // Index 1 never committed: absent.
      sources: { '0': metaToJson(meta(0, 3)), '2': metaToJson(meta(2, 3)) },
    });
    expect(await ckptKeys(j.keys)).toEqual([]);
    const state = await readJobState(client, j.keys);
    expect(state.reshape).toMatchObject({ from: 3, to: 2, restored: [] });
    expect([...state.reshape!.sources]).toEqual([
      [0, meta(0, 3)],
      [2, meta(2, 3)],
    ]);

    await expect(j.term.setDesired(4, state)).rejects.toMatchObject({
      code: 'MASTER_RESHAPE_PENDING',
      message: expect.stringContaining(
        'the change from 3 to 2 shards is still pending: indices 0, 1 of 2 have not restored',
      ),
    });
    expect(await client.get(j.keys.desired).string()).toBe('2');
  });

  it('is refused, writing nothing, when the record would pass 1 MiB', async () => {
    const count = 300;
    const j = await job(
      count,
      Array.from({ length: count }, (_, i) => i),
      { chainFiles: 25 },
    );
    await expect(j.term.setDesired(2, await readJobState(client, j.keys))).rejects.toMatchObject({
      code: 'MASTER_PLACEMENT_FIXED',
      message: expect.stringMatching(
        /the record of the latest checkpoints of 300 of 300 shards would take \d+ bytes, above the 1048576 bytes/,
      ),
    });
    expect(await client.get(j.keys.desired).string()).toBe(String(count));
    expect(await client.get(j.keys.reshape).exists()).toBe(false);
    expect(await client.get(j.keys.checkpointLatest(count - 1)).exists()).toBe(true);
  }, 60_000);
});

describe('a new index’s share of a reshape', () => {
  it('is restored once per index: the tenure has the record and no checkpoint of its own, keeps its source until the leader ends the reshape, and a stale tenure cannot mark it', async () => {
    const j = await job(2, [0, 1]);
    await j.term.setDesired(3, await readJobState(client, j.keys));
    const a = await join(j.keys, 'ps-a');
    await reconcile(j);
    const stale = await primary(a);
    expect(stale).toMatchObject({ index: 0, shardCount: 3 });
    expect(stale.reshape).toMatchObject({ from: 2, to: 3 });
    expect([...stale.reshape!.sources]).toEqual([
      [0, meta(0, 3)],
      [1, meta(1, 3)],
    ]);
    // Its old metas went with the change: the reshape's sources are the committed state.
    expect(stale.checkpoints.everCommitted).toBe(false);
    expect(stale.checkpoints.checkpoints).toEqual([]);
    expect(stale.lastServedEpoch).toBe(0);
    expect(await stale.reshapeFilesToKeep()).toEqual([meta(0, 3)]);

    // Index 0 is given again (a new epoch): the first tenure's mark is refused.
    await client.delete().key(j.keys.assign(0));
    await reconcile(j);
    await expect(stale.markRestored()).rejects.toBeInstanceOf(TenureLostError);
    expect(await client.get(j.keys.reshapeRestored(0)).exists()).toBe(false);
    const first = await primary(a);
    expect(first.epoch).toBeGreaterThan(stale.epoch);
    expect(first.reshape).toMatchObject({ from: 2, to: 3 });
    await first.markRestored();
    expect(await client.get(j.keys.reshapeRestored(0)).string()).toBe(String(first.epoch));

    const [b, c] = [await join(j.keys, 'ps-b'), await join(j.keys, 'ps-c')];
    await reconcile(j);
    const [second, third] = [await primary(b), await primary(c)];
    expect([second.index, third.index]).toEqual([1, 2]);
    expect(await second.reshapeFilesToKeep()).toEqual([meta(1, 3)]);
    // Index 2 is new: it has a share to restore, but no source of its own.
    expect(third.reshape).toMatchObject({ from: 2, to: 3 });
    expect(await third.reshapeFilesToKeep()).toEqual([]);
    await second.markRestored();

    // Not every index restored yet: the leader leaves the record.
    let state = await readJobState(client, j.keys);
    expect(state.reshape!.restored).toEqual([0, 1]);
    await expect(finishReshape(j.writes, state.reshape!, silentLogger)).resolves.toBe(false);
    expect(await first.reshapeFilesToKeep()).toEqual([meta(0, 3)]);

    await third.markRestored();
    state = await readJobState(client, j.keys);
    expect(state.reshape!.restored).toEqual([0, 1, 2]);
    await expect(finishReshape(j.writes, state.reshape!, silentLogger)).resolves.toBe(true);
    expect(await client.getAll().prefix(`${j.keys.root}reshape`).keys()).toEqual([]);
    expect((await readJobState(client, j.keys)).reshape).toBeUndefined();
    expect(await first.reshapeFilesToKeep()).toEqual([]);
  });

  it('is not the business of a tenure whose index already restored it', async () => {
    const j = await job(1, [0]);
    await j.term.setDesired(2, await readJobState(client, j.keys));
    const a = await join(j.keys, 'ps-a');
    await reconcile(j);
    const tenure = await primary(a);
    await tenure.markRestored();
    // The next owner of index 0 (the same member, a new epoch) has nothing to restore.
    await client.delete().key(j.keys.assign(0));
    await reconcile(j);
    const next = await primary(a);
    expect(next.epoch).toBeGreaterThan(tenure.epoch);
    expect(next.reshape).toBeUndefined();
    // The record still exists (index 1 has not restored): the source files stay.
    expect(await next.reshapeFilesToKeep()).toEqual([meta(0, 3)]);
    await expect(next.markRestored()).resolves.toBeUndefined();
    expect(await client.get(j.keys.reshapeRestored(0)).string()).toBe(String(tenure.epoch));
  });
});
