import path from 'node:path';
import { connect, isStale, type PserverClient, type PushReport } from '../src';
import { placeTensor } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import {
  bundleScript,
  bytesOf,
  freePort,
  LocalCluster,
  PserverDriver,
  spawnNode,
  startPserverProcess,
  stopAllProcesses,
  waitFor,
  type ManagedProcess,
  type PserverProcess,
} from '@pserver/testing';

// Real etcd, a real master and real pservers (with spares to take over), over gRPC on loopback.
const blockSize = 16;
const shards = 2;
// Every tensor of the job; the first trainer initializes them all (with SGD, learning rate 1).
const model = {
  big: () => Float32Array.from({ length: 3 * blockSize }, (_, i) => i * 1.5 - 7),
  p: () => Float32Array.of(8, 16, 24, 32),
  hot: () => new Float32Array(64),
};
const declare = (client: PserverClient): Promise<void> =>
  client.initParams(
    Object.fromEntries(Object.entries(model).map(([name, make]) => [name, make()])),
    { sgd: {}, learningRate: { base: 1 } },
  );

afterAll(() => stopAllProcesses());

describe('a trainer client against a job of 2 shards and 2 spares', () => {
  let cluster: LocalCluster;
  const clients: PserverClient[] = [];
  const trainer = async (options: Parameters<typeof connect>[0] = {}): Promise<PserverClient> => {
    const client = await connect({ master: cluster.masterAddresses, ...options });
    clients.push(client);
    await declare(client);
    return client;
  };

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: shards,
      spares: 2,
      masters: 1,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 3,
      blockSize,
    });
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  it('spreads a tensor of 3 blocks over the shards by the placement rule and reads it back identical', async () => {
    const client = await trainer();
    const blocks = placeTensor('big', 3 * blockSize, blockSize, shards);
    expect(new Set(blocks.map((b) => b.shard)).size).toBeGreaterThan(1);

    const { big } = await client.getParams(['big'], Float32Array);
    expect(big).toEqual(model.big());

    // Each block is where the rule puts it: its own shard serves it, with the right bytes.
    for (const block of blocks) {
      const { pserver, epoch } = cluster.serving().get(block.shard)!;
      const driver = new PserverDriver(pserver.address);
      try {
        const reply = await driver.getParams({ trainerId: 1, shardEpoch: epoch }, [block.name]);
        expect(Buffer.from(reply.params[0]!.content)).toEqual(
          bytesOf(model.big().subarray(block.start, block.end)),
        );
      } finally {
        driver.close();
      }
    }
  });

  it('applies every push exactly once when replies are lost and pushes are retried', async () => {
    let dropped = 0;
    const seen = new Set<string>();
    const client = await trainer({
      testHooks: {
        // Lose the first reply of every push, after the pserver applied it.
        dropReply: (shard, step) => {
          const key = `${shard}/${step}`;
          if (seen.has(key)) return false;
          seen.add(key);
          dropped++;
          return true;
        },
      },
    });
    const length = model.hot().length;
    for (let k = 0; k < length; k++) {
      await client.step(async (ctx) => {
        const oneHot = new Float32Array(length);
        oneHot[k] = -1; // SGD with rate 1: the coordinate goes up by exactly 1
        await ctx.sendGrads({ hot: oneHot });
      });
    }
    const pushes = new Set(placeTensor('hot', length, blockSize, shards).map((b) => b.shard)).size;
    expect(dropped).toBe(length * pushes);
    const { hot } = await client.getParams(['hot'], Float32Array);
    expect([...hot]).toEqual(new Array(length).fill(1));

    // Each block was updated once per step: the retries were acknowledged as duplicates.
    for (const [, { pserver }] of cluster.serving()) {
      const driver = new PserverDriver(pserver.address);
      try {
        const status = await driver.status();
        for (const tensor of status.tensors.filter((t) => t.name.startsWith('hot@')))
          expect(Number(tensor.updates)).toBe(length);
      } finally {
        driver.close();
      }
    }
  });

  it('never applies a gradient computed on parameters a failover rolled back (the #107 race)', async () => {
    const client = await trainer();
    const shard = placeTensor('p', 4, blockSize, shards)[0]!.shard;
    const push = (g: number[]): Promise<PushReport> =>
      client.step((ctx) => ctx.sendGrads({ p: Float32Array.from(g) }));

    await push([1, 1, 1, 1]); // p = 7 15 23 31, then checkpointed
    const before = cluster.serving().get(shard)!;
    const driver = new PserverDriver(before.pserver.address);
    await driver.saveCheckpoint().finally(() => driver.close());
    await push([2, 2, 2, 2]); // p = 5 13 21 29, lost with the pserver

    const seenByAttempt: number[][] = [];
    const pushErrors: unknown[] = [];
    await client.step(async (ctx) => {
      const { p } = await ctx.getParams(['p'], Float32Array);
      seenByAttempt.push([...p]);
      if (seenByAttempt.length === 1) {
        // While this step computes, its shard's pserver dies and the spare restores the checkpoint.
        await before.pserver.process.kill();
        await waitFor(
          () => (cluster.serving().get(shard)?.epoch ?? 0) > before.epoch || undefined,
          { timeoutMs: 30_000, description: `a spare serves shard ${shard}` },
        );
      }
      const gradient = p.map((x) => x * 0.5);
      await ctx.sendGrads({ p: gradient }).catch((err: unknown) => {
        pushErrors.push(err);
        throw err;
      });
    });

    expect(seenByAttempt).toEqual([
      [5, 13, 21, 29],
      [7, 15, 23, 31],
    ]);
    expect(pushErrors).toHaveLength(1);
    expect(isStale(pushErrors[0])).toBe(true);
    // The reference run: p0 − g1, restored, then − ½·p.
    const reference = [8, 16, 24, 32].map((x) => x - 1).map((x) => x - 0.5 * x);
    const { p } = await client.getParams(['p'], Float32Array);
    expect([...p]).toEqual(reference);

    // The restored shard itself refuses a push stamped with the epoch the first attempt captured.
    const after = cluster.serving().get(shard)!;
    const replacement = new PserverDriver(after.pserver.address);
    try {
      const stale = await replacement
        .sendGrads({ trainerId: client.trainerId, step: 1_000, shardEpoch: before.epoch }, [
          { name: 'p', elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(new Float32Array(4)) },
        ])
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(stale).toBeInstanceOf(RpcError);
      expect(stale).toMatchObject({ code: 'PSERVER_STALE_EPOCH' });
    } finally {
      replacement.close();
    }
    expect([...(await client.getParams(['p'], Float32Array)).p]).toEqual(reference);
  });
});

describe('the init election among trainer processes', () => {
  let cluster: LocalCluster;
  let fixture: string;

  beforeAll(async () => {
    fixture = bundleScript(path.join(__dirname, 'fixtures', 'init-trainer.ts'));
    cluster = await LocalCluster.start({
      pservers: 2,
      masters: 1,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 2,
      blockSize,
    });
  });

  afterAll(() => cluster?.stop());

  it('lets exactly one of three trainers initialize, and another when that one dies before finishing', async () => {
    const trainers = [1, 2, 3].map((marker) =>
      spawnNode(fixture, [cluster.masterAddresses.join(','), String(marker)], {
        name: `init-trainer-${marker}`,
      }),
    );
    const said = (t: ManagedProcess, event: string): boolean =>
      t.jsonLines().some((e) => e.event === event);
    const writers = (): ManagedProcess[] => trainers.filter((t) => said(t, 'wrote'));

    await waitFor(() => trainers.every((t) => said(t, 'registered')) || undefined, {
      timeoutMs: 30_000,
      description: 'three trainers registered',
    });
    const [first] = await waitFor(() => (writers().length > 0 ? writers() : undefined), {
      timeoutMs: 30_000,
      description: 'a trainer chosen to initialize',
    });
    // The others keep waiting: nobody else writes, nobody is ready.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(writers()).toEqual([first]);
    expect(trainers.filter((t) => said(t, 'ready'))).toEqual([]);

    // The chosen one dies between writing and finishing: its session ends, another is chosen.
    await first!.kill();
    const second = await waitFor(() => writers().find((t) => t !== first), {
      timeoutMs: 30_000,
      description: 'another trainer chosen to initialize',
    });
    expect(writers()).toHaveLength(2);
    second.signal('SIGUSR2');

    const survivors = trainers.filter((t) => t !== first);
    const exits = await Promise.all(survivors.map((t) => t.exited));
    exits.forEach((exit, i) => {
      if (exit.code !== 0) throw survivors[i]!.failure(`exited with ${JSON.stringify(exit)}`);
    });
    // Everyone sees the second initializer's values: the dead one's partial init was replaced.
    const marker = second.jsonLines().find((e) => e.event === 'wrote')!.marker;
    for (const t of survivors)
      expect(t.jsonLines().find((e) => e.event === 'ready')!.values).toEqual([marker]);
  });
});

describe('a standalone trainer: fixed pservers, no master', () => {
  it('trains, and runs a step again when a restarted pserver answers with its new epoch', async () => {
    const ports = [await freePort(), await freePort()];
    const start = (i: number, checkpointDir?: string): Promise<PserverProcess> =>
      startPserverProcess(['--port', String(ports[i]), '--index', String(i), '--shards', '2'], {
        name: `standalone-${i}`,
        checkpointDir,
      });
    const pservers = [await start(0), await start(1)];
    const client = await connect({
      pservers: ports.map((port) => `127.0.0.1:${port}`),
      blockSize: 4,
    });
    try {
      await client.initParams(
        { v: Float64Array.of(1, 2, 3, 4, 5, 6, 7, 8) },
        { sgd: {}, learningRate: { base: 1 } },
      );
      await client.step((ctx) => ctx.sendGrads({ v: new Float64Array(8).fill(1) }));
      const shard = placeTensor('v', 8, 4, 2)[0]!.shard;
      const before = client.view.shards[shard]!.epoch;

      // The pserver of the first block restarts from its last checkpoint, on the same port.
      const driver = new PserverDriver(pservers[shard]!.address);
      await driver.saveCheckpoint().finally(() => driver.close());
      await pservers[shard]!.process.stop();
      pservers[shard] = await start(shard, pservers[shard]!.checkpointDir);

      let attempts = 0;
      await client.step(async (ctx) => {
        attempts++;
        const { v } = await ctx.getParams(['v'], Float64Array);
        await ctx.sendGrads({ v: v.map((x) => x / 2) });
      });
      expect(attempts).toBe(2);
      expect(client.view.shards[shard]!.epoch).toBeGreaterThan(before);
      const { v } = await client.getParams(['v'], Float64Array);
      expect([...v]).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((x) => x / 2));
    } finally {
      await client.close();
      await Promise.all(pservers.map((p) => p.process.stop()));
    }
  });
});
