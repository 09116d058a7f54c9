import type { Etcd3 } from 'etcd3';
import { checksumAlgorithm, type CheckpointMeta } from '@pserver/checkpoint';
import { silentLogger } from '@pserver/logging';
import { sleep, startEtcd, waitFor, type EtcdServer } from '@pserver/testing';
import {
  assign,
  ClusterMember,
  connectEtcd,
  EtcdMetaStore,
  type EtcdShardTenure,
  JobKeys,
  JobWatcher,
  LeaderElection,
  LeaseKeeper,
  planAssignments,
  PserverMembership,
  readJobState,
  retire,
  staleAssignments,
  TenureLostError,
  type JobState,
  type Leader,
} from '../src';

let etcd: EtcdServer;
let client: Etcd3;
let jobNumber = 0;

beforeAll(async () => {
  etcd = await startEtcd();
  client = connectEtcd({ endpoints: [etcd.endpoint] });
});

afterAll(async () => {
  client?.close();
  await etcd?.stop();
});

const newJob = (): JobKeys => new JobKeys(`job-${process.pid}-${++jobNumber}`);
const lease = (ttlSeconds = 2): Promise<LeaseKeeper> =>
  LeaseKeeper.grant(client, { ttlSeconds, logger: silentLogger });

/** The member's next role, which must be a primary's (these tests keep no replicas). */
async function primaryTenure(member: ClusterMember, signal: AbortSignal): Promise<EtcdShardTenure> {
  const role = await member.nextRole(signal);
  if (role.kind !== 'primary') throw new Error(`expected a primary role, got a ${role.kind}`);
  return role.tenure;
}

describe('LeaseKeeper', () => {
  it('keeps a lease alive past its TTL and trusts it only for two thirds of it after each keep-alive', async () => {
    const keeper = await lease(2);
    const granted = performance.now();
    expect(keeper.validUntil - granted).toBeLessThanOrEqual(2000 * (2 / 3) + 5);
    await client.put('/lk/a').value('x').lease(keeper.id);
    await sleep(3_000);
    expect(keeper.isValid()).toBe(true);
    expect(await client.get('/lk/a').string()).toBe('x');
    await keeper.revoke();
    expect(await client.get('/lk/a').string()).toBeNull();
  });

  it('stops trusting the lease by its local deadline when etcd stops answering', async () => {
    const keeper = await lease(2);
    const expired = new Promise<string>((resolve) => keeper.onExpired(resolve));
    etcd.process.signal('SIGSTOP');
    const stoppedAt = performance.now();
    try {
      const reason = await expired;
      expect(reason).toContain('deadline');
      // Within the trusted share of the TTL (plus timer slack), not after etcd's own expiry.
      expect(performance.now() - stoppedAt).toBeLessThan(2_000);
      expect(keeper.isValid()).toBe(false);
    } finally {
      etcd.process.signal('SIGCONT');
    }
    keeper.close();
  });
});

describe('LeaderElection', () => {
  it('elects one leader, fences the old one by its revision, and hands over on resignation', async () => {
    const keys = newJob();
    const [la, lb] = [await lease(), await lease()];
    const a = new LeaderElection(client, keys.electionPrefix, la, 'a:1', silentLogger);
    const b = new LeaderElection(client, keys.electionPrefix, lb, 'b:1', silentLogger);
    const leaderA = await a.campaign(new AbortController().signal);
    const waitingB = b.campaign(new AbortController().signal);
    expect(await a.leader()).toMatchObject({ value: 'a:1', revision: leaderA.revision });
    await a.resign();
    const leaderB = await waitingB;
    expect(leaderB.value).toBe('b:1');
    expect(leaderB.revision).toBeGreaterThan(leaderA.revision);
    // A write guarded by the old leader's token does not land.
    const stale = await client
      .if(leaderA.key, 'Create', '==', leaderA.revision)
      .then(client.put('/el/x').value('a'))
      .commit();
    expect(stale.succeeded).toBe(false);
    await la.revoke();
    await lb.revoke();
  });
});

describe('assignment through leases', () => {
  it('gives indices to the first pservers, keeps a spare, and frees an index with its pserver', async () => {
    const keys = newJob();
    await client.put(keys.desired).value('2');
    await client.put(keys.blockSize).value('8');
    const master = await lease(5);
    const leader = await new LeaderElection(
      client,
      keys.electionPrefix,
      master,
      'm',
      silentLogger,
    ).campaign(new AbortController().signal);
    const leases = [await lease(), await lease(), await lease()];
    // One after another: the oldest registration gets the lowest free index.
    const members: PserverMembership[] = [];
    for (const [i, l] of leases.entries())
      members.push(
        await PserverMembership.register(
          client,
          keys,
          l,
          `ps-${i}`,
          `127.0.0.1:${9000 + i}`,
          silentLogger,
        ),
      );
    const reconcile = async (): Promise<JobState> => {
      const state = await readJobState(client, keys);
      for (const planned of planAssignments(state))
        await assign(client, keys, leader, planned, silentLogger);
      return readJobState(client, keys);
    };
    let state = await reconcile();
    expect(state.assignments.map((a) => [a.index, a.member])).toEqual([
      [0, 'ps-0'],
      [1, 'ps-1'],
    ]);
    const role = await members[0]!.waitForRole(new AbortController().signal);
    if (role.kind !== 'primary') throw new Error(`ps-0 is a ${role.kind}`);
    const first = role.assignment;
    expect(first).toMatchObject({ index: 0, member: 'ps-0', epoch: state.assignments[0]!.epoch });
    expect(await members[0]!.holds(0, first.epoch)).toBe(true);

    // ps-0 dies: its lease (and the assignment under it) goes; the spare gets index 0, with a higher epoch.
    let stopWatching = (): Promise<void> => Promise.resolve();
    const lost = new Promise<string>((resolve) => {
      void members[0]!.watchAssignment(0, first.epoch, resolve).then((stop) => {
        stopWatching = stop;
      });
    });
    leases[0]!.close();
    await expect(lost).resolves.toContain('deleted');
    await stopWatching();
    state = await waitFor(
      async () => {
        const s = await reconcile();
        return s.assignments.find((a) => a.index === 0 && a.member === 'ps-2') ? s : undefined;
      },
      { timeoutMs: 15_000, description: 'the spare takes index 0' },
    );
    expect(state.assignments.find((a) => a.index === 0)!.epoch).toBeGreaterThan(first.epoch);
    for (const l of leases.slice(1)) await l.revoke();
    await master.revoke();
  });

  it('refuses a second process registering the same member', async () => {
    const keys = newJob();
    const [l1, l2] = [await lease(), await lease()];
    await PserverMembership.register(client, keys, l1, 'twin', 'a:1', silentLogger);
    await expect(
      PserverMembership.register(client, keys, l2, 'twin', 'b:1', silentLogger),
    ).rejects.toMatchObject({
      code: 'PSERVER_MEMBER_TAKEN',
    });
    await l1.revoke();
    await l2.revoke();
  });

  it('does not assign for a master that is no longer leader', async () => {
    const keys = newJob();
    await client.put(keys.desired).value('1');
    await client.put(keys.blockSize).value('8');
    const master = await lease(5);
    const election = new LeaderElection(client, keys.electionPrefix, master, 'm', silentLogger);
    const leader = await election.campaign(new AbortController().signal);
    await election.resign();
    const ps = await lease();
    await PserverMembership.register(client, keys, ps, 'p', 'p:1', silentLogger);
    const state = await readJobState(client, keys);
    expect(await assign(client, keys, leader, planAssignments(state)[0]!, silentLogger)).toBe(
      false,
    );
    expect((await readJobState(client, keys)).assignments).toEqual([]);
    await ps.revoke();
    await master.revoke();
  });
});

describe('JobWatcher', () => {
  it('hands over the whole state after each change', async () => {
    const keys = newJob();
    const states: JobState[] = [];
    const watcher = new JobWatcher(client, keys, (s) => void states.push(s), {
      relistIntervalMs: 60_000,
      logger: silentLogger,
    });
    await watcher.start();
    await client.put(keys.desired).value('3');
    await waitFor(() => states.at(-1)?.desired === 3, {
      timeoutMs: 10_000,
      description: 'the new desired count is seen',
    });
    await watcher.close();
  });
});

describe('EtcdMetaStore', () => {
  const meta = (index: number, epoch: number, seq: number): CheckpointMeta => ({
    uuid: `u${seq}`,
    path: `shard-${index}/e${epoch}-s${seq}-u${seq}.ckpt`,
    size: 10,
    checksumAlgorithm,
    checksum: '0000abcd',
    timestampNs: '1',
    shardEpoch: epoch,
    index,
    seq,
    updatesApplied: seq,
    formatVersion: 1,
    chain: [],
  });

  it('commits while the index is held, keeps the retained history, and refuses once replaced', async () => {
    const keys = newJob();
    const holder = await lease(5);
    await client
      .put(keys.assign(0))
      .value(JSON.stringify({ member: 'p', address: 'a' }))
      .lease(holder.id);
    const epoch = Number((await client.get(keys.assign(0)).exec()).kvs[0]!.create_revision);
    const store = await EtcdMetaStore.open(client, keys, 0, epoch, holder);
    expect(store.everCommitted).toBe(false);
    for (const seq of [1, 2, 3, 4]) await store.commit(meta(0, epoch, seq), 2);
    const reopened = await EtcdMetaStore.open(client, keys, 0, epoch, holder);
    expect(reopened.checkpoints.map((m) => m.seq)).toEqual([4, 3]);
    expect(reopened.everCommitted).toBe(true);

    // Another pserver now holds index 0: the old holder's commit is fenced and changes nothing.
    await client.delete().key(keys.assign(0));
    const other = await lease(5);
    await client
      .put(keys.assign(0))
      .value(JSON.stringify({ member: 'q', address: 'b' }))
      .lease(other.id);
    await expect(store.commit(meta(0, epoch, 5), 2)).rejects.toMatchObject({
      code: 'PSERVER_FENCED',
    });
    expect(
      (await EtcdMetaStore.open(client, keys, 0, epoch, holder)).checkpoints.map((m) => m.seq),
    ).toEqual([4, 3]);
    await holder.revoke();
    await other.revoke();
  });
});

describe('EtcdShardTenure', () => {
  const meta = (epoch: number, seq: number): CheckpointMeta => ({
    uuid: `u${seq}`,
    path: `shard-0/e${epoch}-s${seq}-u${seq}.ckpt`,
    size: 10,
    checksumAlgorithm,
    checksum: '0000abcd',
    timestampNs: '1',
    shardEpoch: epoch,
    index: 0,
    seq,
    updatesApplied: seq,
    formatVersion: 1,
    chain: [],
  });

  async function leading(keys: JobKeys): Promise<{ leader: Leader; stop: () => Promise<void> }> {
    const master = await lease(5);
    const election = new LeaderElection(client, keys.electionPrefix, master, 'm', silentLogger);
    const leader = await election.campaign(new AbortController().signal);
    return { leader, stop: () => master.revoke() };
  }

  /** One reconciliation of the leader: stale assignments retired, then free indices assigned. */
  async function reconcile(keys: JobKeys, leader: Leader): Promise<void> {
    let state = await readJobState(client, keys);
    for (const stale of staleAssignments(state))
      await retire(client, keys, leader, stale, state.desired!, silentLogger);
    state = await readJobState(client, keys);
    for (const planned of planAssignments(state))
      await assign(client, keys, leader, planned, silentLogger);
  }

  const join = async (keys: JobKeys, member: string): Promise<ClusterMember> => {
    const joined = await ClusterMember.connect({
      endpoints: [etcd.endpoint],
      job: keys.job,
      member,
      leaseTtlSeconds: 2,
      logger: silentLogger,
    });
    await joined.register(`${member}:1`);
    return joined;
  };

  it('carries the count and block size of its assignment, announces serving, and is lost once when the count changes', async () => {
    const keys = newJob();
    await client.put(keys.desired).value('1');
    await client.put(keys.blockSize).value('8');
    const { leader, stop } = await leading(keys);
    const member = await join(keys, 'ps');
    await reconcile(keys, leader);
    const tenure = await primaryTenure(member, new AbortController().signal);
    const first = (await readJobState(client, keys)).assignments[0]!;
    expect(tenure).toMatchObject({ index: 0, shardCount: 1, blockSize: 8, epoch: first.epoch });
    expect(tenure.holds()).toBe(true);
    await expect(tenure.confirm()).resolves.toBe(true);
    await tenure.checkpoints.commit(meta(tenure.epoch, 1), 2);

    await tenure.announceServing();
    expect((await readJobState(client, keys)).pservers[0]!.serving).toEqual({
      index: 0,
      epoch: tenure.epoch,
    });

    // A new count before initialization: the leader retires the assignment; the tenure ends once.
    const lost: string[] = [];
    tenure.onLost((err) => lost.push(err.reason));
    await client.put(keys.desired).value('2');
    await reconcile(keys, leader);
    await waitFor(() => lost.length > 0, { timeoutMs: 10_000, description: 'the tenure ends' });
    expect(lost).toHaveLength(1);
    expect(lost[0]).toContain('deleted');
    expect(tenure.holds()).toBe(false);
    await expect(tenure.checkpoints.commit(meta(tenure.epoch, 2), 2)).rejects.toBeInstanceOf(
      TenureLostError,
    );
    // The registration lives on: the same member takes an index again, under the new count and
    // a new epoch.
    expect(member.isAlive()).toBe(true);
    const next = await primaryTenure(member, new AbortController().signal);
    expect(next.shardCount).toBe(2);
    expect(next.epoch).toBeGreaterThan(tenure.epoch);
    expect(lost).toHaveLength(1);
    await next.close();
    await member.leave();
    await stop();
  });

  it('is never taken up from an assignment without a shard count; the leader replaces it', async () => {
    const keys = newJob();
    await client.put(keys.desired).value('1');
    await client.put(keys.blockSize).value('8');
    const { leader, stop } = await leading(keys);
    const member = await join(keys, 'ps');
    const [registered] = (await readJobState(client, keys)).pservers;
    // What an older master wrote: no count, no block size.
    await client
      .put(keys.assign(0))
      .value(JSON.stringify({ member: 'ps', address: 'ps:1' }))
      .lease(registered!.lease);
    const waiting = new AbortController();
    let taken = false;
    const next = primaryTenure(member, waiting.signal).then((t) => {
      taken = true;
      return t;
    });
    await sleep(500);
    expect(taken).toBe(false);
    const old = (await readJobState(client, keys)).assignments[0]!;
    expect(staleAssignments(await readJobState(client, keys)).map((a) => a.epoch)).toEqual([
      old.epoch,
    ]);
    await reconcile(keys, leader);
    const tenure = await next;
    expect(tenure).toMatchObject({ index: 0, shardCount: 1, blockSize: 8 });
    expect(tenure.epoch).toBeGreaterThan(old.epoch);
    await tenure.close();
    await member.leave();
    await stop();
  });

  it('ends by the local lease deadline when keep-alives stop, and refuses commits from then on', async () => {
    const keys = newJob();
    await client.put(keys.desired).value('1');
    await client.put(keys.blockSize).value('8');
    const { leader, stop } = await leading(keys);
    const member = await join(keys, 'ps');
    await reconcile(keys, leader);
    const tenure = await primaryTenure(member, new AbortController().signal);
    const lost = new Promise<TenureLostError>((resolve) => tenure.onLost(resolve));
    const stoppedAt = performance.now();
    etcd.process.signal('SIGSTOP');
    try {
      const err = await lost;
      expect(err.reason).toContain('lease');
      expect(performance.now() - stoppedAt).toBeLessThan(2_000);
      expect(tenure.holds()).toBe(false);
      await expect(tenure.checkpoints.commit(meta(tenure.epoch, 1), 2)).rejects.toMatchObject({
        code: 'PSERVER_FENCED',
      });
    } finally {
      etcd.process.signal('SIGCONT');
    }
    member.close();
    await stop();
  });
});
