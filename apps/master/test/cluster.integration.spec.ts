import { status } from '@grpc/grpc-js';
import { connect } from '@pserver/client';
import { connectEtcd, JobKeys, readJobState, type EtcdClient } from '@pserver/coordination';
import { shardOf, type RequestContext } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import {
  bytesOf,
  float32s,
  LocalCluster,
  MasterDriver,
  PserverDriver,
  sleep,
  stopAllProcesses,
  waitFor,
  type PserverProcess,
} from '@pserver/testing';

// Short TTLs keep the suite fast; every bound below is generous and only catches hangs. The
// timings measured here are printed and recorded in apps/master/README.md.
const ttlSeconds = 2;
const timings: Record<string, number[]> = {};
const record = (what: string, ms: number): void => void (timings[what] ??= []).push(Math.round(ms));

afterAll(async () => {
  await stopAllProcesses();
  console.log('measured timings (ms):', JSON.stringify(timings));
});

function rejection(promise: Promise<unknown>): Promise<RpcError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: unknown) => {
      if (!(err instanceof RpcError)) throw err;
      return err;
    },
  );
}

/** Initializes a tensor `w` of 4 float32 values on the shard at `index` and finishes its init. */
async function initShard(
  cluster: LocalCluster,
  index: number,
  name: string,
): Promise<{ driver: PserverDriver; context: RequestContext }> {
  const { pserver, epoch } = cluster.serving().get(index)!;
  const driver = new PserverDriver(pserver.address);
  const context = { trainerId: 1, shardEpoch: epoch };
  await driver.initParam(
    context,
    { name, elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(new Float32Array([1, 2, 3, 4])) },
    { sgd: {}, learningRate: { base: 1 } },
  );
  await driver.finishInitParams(context);
  return { driver, context };
}

/** A block name that the placement rule puts on `index` of `shards`. */
function nameOn(index: number, shards: number): string {
  for (let i = 0; ; i++) if (shardOf(`t${i}`, shards) === index) return `t${i}`;
}

describe('a cluster: 2 masters, 2 pservers and a spare', () => {
  let cluster: LocalCluster;
  let client: EtcdClient;
  let keys: JobKeys;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 2,
      spares: 1,
      masters: 2,
      leaseTtlSeconds: ttlSeconds,
      sessionTtlSeconds: 3,
    });
    client = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    keys = new JobKeys(cluster.options.job);
  });

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('assigns indices 0 and 1 and keeps the third pserver waiting', async () => {
    const state = await readJobState(client, keys);
    expect(state.desired).toBe(2);
    expect(state.assignments.map((a) => a.index).sort()).toEqual([0, 1]);
    const spare = cluster.pservers[2]!;
    expect(
      spare.process
        .jsonLines()
        .some(
          (e) =>
            e.msg === 'waiting for a shard index or a replica to keep (a hot spare until then)',
        ),
    ).toBe(true);
    expect(spare.process.jsonLines().some((e) => e.msg === 'serving')).toBe(false);
  });

  it('answers trainer calls only on the leader; a follower names the leader', async () => {
    const [a, b] = cluster.masters.map((m) => new MasterDriver(m.address));
    const answers = await Promise.allSettled([a!.clusterView(), b!.clusterView()]);
    const led = answers.findIndex((r) => r.status === 'fulfilled');
    const followed = 1 - led;
    expect(led).toBeGreaterThanOrEqual(0);
    const refusal = (answers[followed] as PromiseRejectedResult).reason as RpcError;
    expect(refusal).toMatchObject({
      status: status.UNAVAILABLE,
      code: 'MASTER_NOT_LEADER',
      facts: { leader: cluster.masters[led]!.address },
    });
    const view = (
      answers[led] as PromiseFulfilledResult<Awaited<ReturnType<MasterDriver['clusterView']>>>
    ).value;
    expect(view).toMatchObject({ shardCount: 2, blockSize: 1_048_576, initialized: false });
    expect(view.shards.map((s) => s.index)).toEqual([0, 1]);
    a!.close();
    b!.close();
  });

  it('streams the view on every change, and refuses a shard count that would orphan a live shard', async () => {
    const leader = cluster.masters.find((m) =>
      m.process.jsonLines().some((e) => e.msg === 'leading'),
    )!;
    const driver = new MasterDriver(leader.address);
    const watch = driver.watch();
    await waitFor(() => watch.views.length > 0, {
      timeoutMs: 10_000,
      description: 'the first view',
    });
    expect(watch.views[0]!.shards.map((shard) => shard.shardEpoch > 0)).toEqual([true, true]);
    const refused = await rejection(driver.setDesiredShards(1));
    expect(refused).toMatchObject({
      status: status.FAILED_PRECONDITION,
      code: 'MASTER_SHARDS_IN_USE',
    });
    expect(refused.message).toContain('would orphan live shards 1');
    // Growing is allowed before initialization: the view shows index 2, unassigned until the spare takes it.
    await driver.setDesiredShards(3);
    await waitFor(
      () => watch.views.some((v) => v.shardCount === 3 && v.shards[2]?.address !== ''),
      {
        timeoutMs: 15_000,
        description: 'a view with the spare serving index 2',
      },
    );
    const status_ = await driver.status();
    expect(status_).toMatchObject({ leaderAddress: leader.address, view: { shardCount: 3 } });
    // Back to two: the pserver on index 2 must go first.
    const onTwo = await waitFor(() => cluster.serving().get(2), { timeoutMs: 15_000 });
    await onTwo.pserver.process.stop();
    await waitFor(
      async () => (await readJobState(client, keys)).assignments.every((a) => a.index < 2),
      { timeoutMs: 15_000 },
    );
    await driver.setDesiredShards(2);
    await cluster.startPserver(); // a spare again, for the tests below
    watch.stop();
    driver.close();
  });

  it('refuses a far-future, bogus shard epoch with INVALID_ARGUMENT and keeps serving', async () => {
    const { pserver, epoch } = cluster.serving().get(1)!;
    const driver = new PserverDriver(pserver.address);
    const error = await rejection(
      driver.getParams({ trainerId: 1, shardEpoch: epoch + 1_000_000 }, ['nothing']),
    );
    expect(error).toMatchObject({ status: status.INVALID_ARGUMENT, code: 'PSERVER_BOGUS_EPOCH' });
    expect((await driver.status()).shardEpoch).toBe(epoch);
    driver.close();
  });

  it('kill -9 of pserver 0: the spare takes index 0 with a higher epoch and serves its last checkpoint', async () => {
    const name = nameOn(0, 2);
    const { driver, context } = await initShard(cluster, 0, name);
    await driver.sendGrads({ ...context, step: 1 }, [
      {
        name,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        content: bytesOf(new Float32Array([1, 1, 1, 1])),
      },
    ]);
    await new Promise((resolve, reject) =>
      driver.client.saveCheckpoint({}, (err, reply) => (err ? reject(err) : resolve(reply))),
    );
    const victim = cluster.pserverServing(0);
    const oldEpoch = cluster.serving().get(0)!.epoch;
    driver.close();

    const killedAt = performance.now();
    await victim.process.kill();
    const replacement = await waitFor(
      () => {
        const entry = cluster.serving().get(0);
        return entry && entry.epoch > oldEpoch ? entry : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 20, description: 'a spare serves index 0 again' },
    );
    record(
      'pserver kill -9 → spare serving (detection + reassignment + recovery)',
      performance.now() - killedAt,
    );
    expect(replacement.pserver).not.toBe(victim);
    const restored = new PserverDriver(replacement.pserver.address);
    const values = await restored.getParams({ trainerId: 1, shardEpoch: replacement.epoch }, [
      name,
    ]);
    expect(float32s(values.params[0]!.content)).toEqual([0, 1, 2, 3]);
    // A push computed before the failover carries the old epoch: refused with the new one.
    const stale = await rejection(
      restored.sendGrads({ trainerId: 1, step: 2, shardEpoch: oldEpoch }, []),
    );
    expect(stale).toMatchObject({
      status: status.ABORTED,
      facts: { shardEpoch: replacement.epoch },
    });
    restored.close();
  });

  it('a pserver paused through losing its lease fences itself: its commit fails, it answers nothing, it exits', async () => {
    // This pserver stops itself (SIGSTOP) right before committing its next checkpoint.
    const sleeper = await cluster.startPserver([], { PSERVER_FAILPOINT: 'before-commit:stop' });
    await cluster.pserverServing(1).process.kill();
    const taken = await waitFor(
      () => (cluster.serving().get(1)?.pserver === sleeper ? cluster.serving().get(1) : undefined),
      {
        timeoutMs: 30_000,
        description: 'the sleeper takes index 1',
      },
    );
    const replacement = await cluster.startPserver();
    const name = nameOn(1, 2);
    const driver = new PserverDriver(sleeper.address, { timeoutMs: 30_000 });
    const context = { trainerId: 1, shardEpoch: taken.epoch };
    await driver.initParam(
      context,
      { name, elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(new Float32Array([5, 5])) },
      { sgd: {}, learningRate: { base: 1 } },
    );
    // FinishInitParams commits the shard's first checkpoint: the sleeper stops before its commit.
    const saving = new Promise<{ code: number } | null>((resolve) =>
      driver.client.finishInitParams({ context }, (err) => resolve(err)),
    );
    await sleeper.process.waitForLog((e) => e.msg === 'failpoint: stopping the process', {
      timeoutMs: 10_000,
    });
    // Pushed while it sleeps: it must never be acknowledged.
    const pending = rejection(
      driver.sendGrads({ ...context, step: 1 }, [
        { name, elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(new Float32Array([1, 1])) },
      ]),
    );
    await waitFor(() => cluster.serving().get(1)?.pserver === replacement, {
      timeoutMs: 30_000,
      description: 'the replacement serves index 1',
    });
    await sleep(ttlSeconds * 1000);
    const metaBefore = await client.get(keys.checkpointLatest(1)).string();
    sleeper.process.signal('SIGCONT');

    expect(await sleeper.process.exited).toMatchObject({ code: 4 });
    expect((await saving)?.code).not.toBe(status.OK);
    expect((await pending).status).not.toBe(status.OK);
    expect(
      sleeper.process
        .jsonLines()
        .some((e) => e.msg === 'fenced: no longer acting on the shard; exiting'),
    ).toBe(true);
    // Its commit did not land, and no committed meta names a file of its epoch.
    expect(await client.get(keys.checkpointLatest(1)).string()).toBe(metaBefore);
    const history = Object.values(
      await client.getAll().prefix(keys.checkpointHistoryPrefix(1)).strings(),
    );
    expect(history.filter((json) => json.includes(`e${taken.epoch}-`))).toEqual([]);
    driver.close();
  });

  it('two processes claiming one member: only one registers', async () => {
    const holder = cluster.pservers.find(
      (p) => p.process.running && p.process.jsonLines().some((e) => e.msg === 'serving'),
    )!;
    const member = holder.process.jsonLines().find((e) => e.msg === 'registered as a pserver')!
      .member as string;
    // The second one listens first, then fails to register and exits.
    const clash = await cluster.startPserver(['--member', member]);
    expect((await clash.process.exited).code).toBe(1);
    expect(clash.process.lines.join('\n')).toContain(
      `member ${member} is already registered by another live process`,
    );
    expect(holder.process.running).toBe(true);
  });

  it('graceful SIGTERM commits a final checkpoint and frees the index well under the TTL', async () => {
    const entry = cluster.serving().get(0)!;
    // A change since the last checkpoint, which the final one must keep.
    const driver = new PserverDriver(entry.pserver.address);
    const name = nameOn(0, 2);
    await driver.sendGrads({ trainerId: 9, step: 1, shardEpoch: entry.epoch }, [
      {
        name,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        content: bytesOf(new Float32Array([1, 1, 1, 1])),
      },
    ]);
    driver.close();
    const replacement = await cluster.startPserver();
    const stoppedAt = performance.now();
    expect(await entry.pserver.process.stop()).toEqual({ code: 75, signal: null });
    const freedMs = performance.now() - stoppedAt;
    await waitFor(() => cluster.serving().get(0)?.pserver === replacement, { timeoutMs: 30_000 });
    const takeoverMs = performance.now() - stoppedAt;
    record('pserver SIGTERM → index free', freedMs);
    record('pserver SIGTERM → spare serving', takeoverMs);
    expect(takeoverMs).toBeLessThan(ttlSeconds * 1000 * 3);
    expect(
      entry.pserver.process
        .jsonLines()
        .some((e) => e.msg === 'checkpoint committed' && e.reason === 'shutdown'),
    ).toBe(true);
    // The replacement recovered that final checkpoint.
    const next = cluster.serving().get(0)!;
    const reader = new PserverDriver(next.pserver.address);
    const values = await reader.getParams({ trainerId: 1, shardEpoch: next.epoch }, [name]);
    expect(float32s(values.params[0]!.content)).toEqual([-1, 0, 1, 2]);
    reader.close();
  });
});

describe('master failover', () => {
  let cluster: LocalCluster;
  let client: EtcdClient;
  let keys: JobKeys;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 1,
      masters: 2,
      leaseTtlSeconds: ttlSeconds,
      sessionTtlSeconds: 4,
    });
    client = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    keys = new JobKeys(cluster.options.job);
  });

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  async function leaderIndex(): Promise<number> {
    return waitFor(
      async () => {
        for (const [i, m] of cluster.masters.entries()) {
          if (!m.process.running) continue;
          const driver = new MasterDriver(m.address, 2_000);
          const led = await driver.clusterView().then(
            () => true,
            () => false,
          );
          driver.close();
          if (led) return i;
        }
        return undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, description: 'a master leads' },
    );
  }

  it('registers trainers with ids never reused, and elects exactly one initializer, then another when it dies', async () => {
    const leader = new MasterDriver(cluster.masters[await leaderIndex()]!.address);
    const trainers = await Promise.all([
      leader.registerTrainer('a'),
      leader.registerTrainer('b'),
      leader.registerTrainer('c'),
    ]);
    const ids = trainers.map((t) => t.trainerId);
    expect(new Set(ids).size).toBe(3);
    const decisions = await Promise.all(ids.map((id) => leader.beginInit(id)));
    expect(decisions.filter((d) => d.decision === 'INIT_DECISION_INITIALIZE')).toHaveLength(1);
    const owner = decisions.find((d) => d.decision === 'INIT_DECISION_INITIALIZE')!.ownerTrainerId;
    expect(
      decisions
        .filter((d) => d.decision === 'INIT_DECISION_WAIT')
        .every((d) => d.ownerTrainerId === owner),
    ).toBe(true);

    // The owner stops keeping alive (it died); the others do. Another is chosen.
    const others = ids.filter((id) => id !== owner);
    const keeping = setInterval(
      () => others.forEach((id) => void leader.keepAlive(id).catch(() => undefined)),
      500,
    );
    try {
      const next = await waitFor(
        async () => {
          const d = await leader.beginInit(others[0]!);
          return d.decision === 'INIT_DECISION_INITIALIZE' ? d : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 200, description: 'a live trainer takes over the init' },
      );
      expect(next.ownerTrainerId).toBe(others[0]);
      await leader.finishInit(others[0]!);
      expect((await leader.beginInit(others[1]!)).decision).toBe('INIT_DECISION_DONE');
      // KeepAlive's documented answer: NOT_FOUND with the code in the pserver-error-code trailer.
      const expired = await rejection(leader.keepAlive(owner));
      expect(expired).toMatchObject({ status: status.NOT_FOUND, code: 'MASTER_SESSION_EXPIRED' });
      const trailer = (expired.cause as { metadata?: { get(key: string): unknown[] } }).metadata;
      expect(trailer?.get('pserver-error-code').map(String)).toEqual(['MASTER_SESSION_EXPIRED']);
      const newcomer = await leader.registerTrainer('d');
      expect(ids).not.toContain(newcomer.trainerId);
      await leader.unregisterTrainer(newcomer.trainerId);
    } finally {
      clearInterval(keeping);
    }
    leader.close();
  });

  it('SIGTERM on the leader resigns: the follower leads at once', async () => {
    const first = await leaderIndex();
    const stoppedAt = performance.now();
    expect(await cluster.masters[first]!.process.stop()).toEqual({ code: 75, signal: null });
    const second = await leaderIndex();
    record('leader master SIGTERM → follower leads', performance.now() - stoppedAt);
    expect(second).not.toBe(first);
    expect(performance.now() - stoppedAt).toBeLessThan(ttlSeconds * 1000);
    await cluster.startMaster();
  });

  it('kill -9 of the leader: the follower leads, keeps the live sessions, and the old leader writes nothing', async () => {
    const first = await leaderIndex();
    const leader = new MasterDriver(cluster.masters[first]!.address);
    const trainer = (await leader.registerTrainer('survivor')).trainerId;
    leader.close();

    const killedAt = performance.now();
    await cluster.masters[first]!.process.kill();
    const second = await leaderIndex();
    record('leader master kill -9 → follower leads', performance.now() - killedAt);
    expect(second).not.toBe(first);
    const view = new MasterDriver(cluster.masters[second]!.address);
    // The session survived the change of leader.
    await expect(view.keepAlive(trainer)).resolves.toBeDefined();
    view.close();
  });

  it('a paused old leader resumed past its lease writes nothing and exits; one pserver per index throughout', async () => {
    const standby = await cluster.startMaster();
    const current = await leaderIndex();
    const paused = cluster.masters[current]!;
    const history: { index: number; lease: string }[] = [];
    const watcher = await client.watch().prefix(keys.assignPrefix).create();
    watcher.on('put', (kv) =>
      history.push({ index: keys.indexOf(kv.key.toString())!, lease: kv.lease }),
    );

    paused.process.signal('SIGSTOP');
    await waitFor(async () => (await leaderIndex()) !== current, {
      timeoutMs: 30_000,
      description: 'another master leads',
    });
    // While the old leader sleeps, a new pserver joins and the desired count allows it a spare only.
    await cluster.startPserver();
    await sleep(ttlSeconds * 1000);
    const revisionBefore = (await readJobState(client, keys)).revision;
    paused.process.signal('SIGCONT');
    expect((await paused.process.exited).code).not.toBe(0);
    await sleep(500);
    // Nothing the old leader did after resuming reached etcd as an assignment.
    const state = await readJobState(client, keys);
    expect(state.assignments.map((a) => a.index)).toEqual([0]);
    expect(history.filter((h) => h.index === 0).length).toBeLessThanOrEqual(1);
    expect(state.revision).toBeGreaterThanOrEqual(revisionBefore);
    await watcher.cancel();
    expect(standby.process.running).toBe(true);
  });
});

describe('etcd unavailable for 2×TTL', () => {
  it('every pserver fences itself; restarted after etcd returns, the cluster serves the checkpointed state again', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      masters: 1,
      leaseTtlSeconds: ttlSeconds,
    });
    try {
      const names = [nameOn(0, 2), nameOn(1, 2)];
      for (const index of [0, 1]) {
        const { driver } = await initShard(cluster, index, names[index]!);
        await new Promise((resolve, reject) =>
          driver.client.saveCheckpoint({}, (err, reply) => (err ? reject(err) : resolve(reply))),
        );
        driver.close();
      }
      const pservers: PserverProcess[] = [0, 1].map((i) => cluster.pserverServing(i));
      cluster.etcd.process.signal('SIGSTOP');
      const stoppedAt = performance.now();
      const exits = await Promise.all(pservers.map((p) => p.process.exited));
      record('etcd stopped → every pserver fenced', performance.now() - stoppedAt);
      expect(exits.map((e) => e.code)).toEqual([4, 4]);
      // The master could not trust its lease either.
      expect((await cluster.masters[0]!.process.exited).code).toBe(4);
      await sleep(Math.max(0, 2 * ttlSeconds * 1000 - (performance.now() - stoppedAt)));
      cluster.etcd.process.signal('SIGCONT');

      // A supervisor starts them again.
      await cluster.startMaster();
      await cluster.startPserver();
      await cluster.startPserver();
      const served = await waitFor(
        () => {
          const s = cluster.serving();
          return [0, 1].every((i) => s.has(i) && !pservers.includes(s.get(i)!.pserver))
            ? s
            : undefined;
        },
        { timeoutMs: 60_000, description: 'both indices served by the new processes' },
      );
      for (const index of [0, 1]) {
        const { pserver, epoch } = served.get(index)!;
        const driver = new PserverDriver(pserver.address);
        const values = await driver.getParams({ trainerId: 1, shardEpoch: epoch }, [names[index]!]);
        expect(float32s(values.params[0]!.content)).toEqual([1, 2, 3, 4]);
        driver.close();
      }
    } finally {
      await cluster.stop();
    }
  });
});

describe('serving, recovering and fenced: 1 master, 2 pservers and a spare', () => {
  // A longer lease: a spare paused between recovering and serving must still hold it after.
  const leaseTtlSeconds = 4;
  let cluster: LocalCluster;
  let master: MasterDriver;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 2,
      masters: 1,
      leaseTtlSeconds,
      sessionTtlSeconds: 3,
    });
    master = new MasterDriver(cluster.masters[0]!.address);
  });

  afterAll(async () => {
    master?.close();
    await cluster?.stop();
  });

  it('shows a spare taking over as serving: false while it recovers, then serving: true in a new view', async () => {
    const watch = master.watch();
    try {
      await waitFor(() => watch.views.at(-1)?.shards.every((s) => s.serving), {
        timeoutMs: 15_000,
        description: 'a view with both shards serving',
      });
      // The spare stops itself (SIGSTOP) right after recovering index 0, before serving it.
      const spare = await cluster.startPserver([], { PSERVER_FAILPOINT: 'after-recovery:stop' });
      await cluster.pserverServing(0).process.stop();
      await spare.process.waitForLog((e) => e.msg === 'failpoint: stopping the process', {
        timeoutMs: 15_000,
      });
      const recovering = await waitFor(
        () =>
          watch.views.find((v) => v.shards[0]?.address === spare.address && !v.shards[0].serving),
        { timeoutMs: 10_000, description: 'a view with the spare assigned, not serving' },
      );
      await sleep(500);
      expect(watch.views.at(-1)!.shards[0]).toMatchObject({
        address: spare.address,
        serving: false,
      });
      spare.process.signal('SIGCONT');
      const served = await waitFor(
        () =>
          watch.views.find((v) => v.shards[0]?.address === spare.address && v.shards[0].serving),
        { timeoutMs: 10_000, description: 'a view with the spare serving' },
      );
      expect(served.revision).toBeGreaterThan(recovering.revision);
      expect(served.shards[0]!.shardEpoch).toBe(recovering.shards[0]!.shardEpoch);
      expect(cluster.serving().get(0)).toMatchObject({
        pserver: spare,
        epoch: served.shards[0]!.shardEpoch,
      });
    } finally {
      watch.stop();
    }
  });

  it('answers a call in flight when it is fenced UNAVAILABLE with PSERVER_FENCED, then exits 4', async () => {
    const { pserver, epoch } = cluster.serving().get(1)!;
    // Without keepalive pings, which would end the call during the pause before the pserver can.
    const driver = new PserverDriver(pserver.address, { timeoutMs: 30_000, keepalive: false });
    try {
      // The shard is not initialized: the GetParams waits, in flight, inside the pserver.
      const parked = rejection(
        driver.getParams({ trainerId: 1, shardEpoch: epoch }, [nameOn(1, 2)], 30_000),
      );
      await sleep(300);
      pserver.process.signal('SIGSTOP');
      await sleep(leaseTtlSeconds * 1000 + 1_000);
      pserver.process.signal('SIGCONT');
      const refused = await parked;
      expect(refused).toMatchObject({ status: status.UNAVAILABLE, code: 'PSERVER_FENCED' });
      expect(await pserver.process.exited).toMatchObject({ code: 4 });
    } finally {
      driver.close();
    }
  });
});

describe('a shard-count change before initialization: 1 master, 2 pservers and a spare', () => {
  const blockSize = 4;
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 2,
      spares: 1,
      masters: 1,
      leaseTtlSeconds: ttlSeconds,
      sessionTtlSeconds: 3,
      blockSize,
    });
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('re-assigns every index under the new count with a new epoch, and a trainer connected before trains through it', async () => {
    const master = new MasterDriver(cluster.masters[0]!.address);
    const watch = master.watch();
    const trainer = await connect({ master: cluster.masterAddresses });
    try {
      const before = await waitFor(
        () => watch.views.find((v) => v.shardCount === 2 && v.shards.every((s) => s.serving)),
        { timeoutMs: 15_000, description: 'a view of 2 serving shards' },
      );
      const newestBefore = Math.max(...before.shards.map((s) => s.shardEpoch));
      const changedAt = performance.now();
      await master.setDesiredShards(3);
      const after = await waitFor(
        () =>
          watch.views.find(
            (v) =>
              v.shardCount === 3 && v.shards.every((s) => s.serving && s.shardEpoch > newestBefore),
          ),
        {
          timeoutMs: 30_000,
          intervalMs: 10,
          description: 'a view of 3 serving shards, each with a new epoch',
        },
      );
      record(
        'SetDesiredShards 2 → 3 before init → every index serving under a new epoch',
        performance.now() - changedAt,
      );
      // Every pserver serves under the new count and epoch (no silent fallback to the old count),
      // and none had to be restarted for it.
      for (const shard of after.shards) {
        const driver = new PserverDriver(shard.address);
        try {
          expect(await driver.status()).toMatchObject({
            index: shard.index,
            shardCount: 3,
            shardEpoch: shard.shardEpoch,
          });
        } finally {
          driver.close();
        }
      }
      expect(cluster.pservers.every((p) => p.process.running)).toBe(true);

      const w = Float32Array.from({ length: 5 * blockSize }, (_, i) => i);
      await trainer.initParams({ w }, { sgd: {}, learningRate: { base: 1 } });
      await trainer.step((ctx) => ctx.sendGrads({ w: new Float32Array(w.length).fill(1) }));
      const read = await trainer.getParams(['w'], Float32Array);
      expect([...read.w]).toEqual([...w].map((x) => x - 1));
      expect(trainer.view.shards.map((s) => s.epoch)).toEqual(
        after.shards.map((s) => s.shardEpoch),
      );
    } finally {
      watch.stop();
      master.close();
      await trainer.close();
    }
  });
});
