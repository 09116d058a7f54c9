import {
  freePort,
  LocalCluster,
  startPserverProcess,
  stopAllProcesses,
  type PserverProcess,
} from '@pserver/testing';
import { bucketOfBigInt, tableShards } from '@pserver/proto';
import { connect, type PserverClient } from '../src';

afterAll(() => stopAllProcesses());

// Two standalone pservers; one trainer initializes a tensor and a table, steps look rows up and
// push row gradients with the dense ones; SGD with rate 1 from a constant start, so every row
// is 0.5 minus the float32 sum of its gradients.
const dim = 3;
const table = {
  name: 'emb',
  dim,
  buckets: 16,
  initializer: { constant: { value: 0.5 } },
  optimizer: { sgd: {}, learningRate: { base: 1 } },
};
const sgd = { sgd: {}, learningRate: { base: 1 } };

/** The rows a step pushes: row i of id ids[i] is [i + 0.25, −i, 1]. */
function gradsFor(ids: BigInt64Array): Float32Array {
  const grads = new Float32Array(ids.length * dim);
  for (let i = 0; i < ids.length; i++) grads.set([i + 0.25, -i, 1], i * dim);
  return grads;
}

/** What the table holds after the pushes of `batches`, by id: 0.5 − Σ grads in float32. */
function expectedRows(batches: BigInt64Array[]): Map<bigint, Float32Array> {
  const rows = new Map<bigint, Float32Array>();
  for (const ids of batches) {
    const grads = gradsFor(ids);
    // The push merges duplicates first (summed in order), then one SGD update per id.
    const merged = new Map<bigint, Float32Array>();
    ids.forEach((id, i) => {
      const g = grads.subarray(i * dim, (i + 1) * dim);
      const sum = merged.get(id);
      if (sum) for (let e = 0; e < dim; e++) sum[e] = sum[e]! + g[e]!;
      else merged.set(id, Float32Array.from(g));
    });
    for (const [id, g] of merged) {
      const row = rows.get(id) ?? new Float32Array(dim).fill(0.5);
      for (let e = 0; e < dim; e++) row[e] = row[e]! - g[e]!;
      rows.set(id, row);
    }
  }
  return rows;
}

function rowsOf(expected: Map<bigint, Float32Array>, ids: BigInt64Array): number[] {
  return [...ids].flatMap((id) => [...(expected.get(id) ?? new Float32Array(dim).fill(0.5))]);
}

describe('sparse tables', () => {
  let pservers: PserverProcess[] = [];
  let addresses: string[] = [];
  const clients: PserverClient[] = [];

  beforeAll(async () => {
    const ports = [await freePort(), await freePort()];
    pservers = await Promise.all(
      ports.map((port, i) =>
        startPserverProcess(['--port', String(port), '--index', String(i), '--shards', '2'], {
          name: `tables-${i}`,
        }),
      ),
    );
    addresses = ports.map((port) => `127.0.0.1:${port}`);
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(pservers.map((p) => p.process.stop()));
  });

  it('looks rows up, applies row and dense gradients of a step once, and serves a reader that attaches', async () => {
    let dropped = false;
    const trainer = await connect({
      pservers: addresses,
      blockSize: 4,
      // The first push's reply from shard 0 is lost after the shard applied it: the resend of the
      // same step is a duplicate, so its rows and blocks change once.
      testHooks: {
        dropReply: (shard) => {
          if (dropped || shard !== 0) return false;
          dropped = true;
          return true;
        },
      },
    });
    clients.push(trainer);
    await trainer.initParams({ w: new Float32Array(6) }, sgd, { tables: [table] });

    // Ids on both shards, with duplicates, negative and beyond 2^53.
    const first = BigInt64Array.from([3n, -1n, 3n, 2n ** 53n + 1n, 0n, 42n, -1n, 7n, 3n]);
    const second = BigInt64Array.from([42n, 5n, 3n, -(2n ** 63n), 5n]);
    const route = tableShards('emb', 16, 2);
    const shardsUsed = new Set([...first].map((id) => route[bucketOfBigInt(id, 16)]));
    expect(shardsUsed.size).toBe(2);

    for (const ids of [first, second]) {
      await trainer.step(async (ctx) => {
        const before = await ctx.lookup('emb', ids);
        expect(before.length).toBe(ids.length * dim);
        await ctx.pushRows('emb', ids, gradsFor(ids));
        await ctx.sendGrads({ w: new Float32Array(6).fill(1) });
      });
    }
    expect(dropped).toBe(true);

    const expected = expectedRows([first, second]);
    const all = BigInt64Array.from([...first, ...second, 99n]); // 99: no row, reads its init
    const after = await trainer.step((ctx) => ctx.lookup('emb', all));
    expect([...after]).toEqual(rowsOf(expected, all));
    expect([...(await trainer.getParams(['w'], Float32Array)).w]).toEqual(Array(6).fill(-2));

    // A reader that never initializes: it learns the table from the shards' listing.
    const reader = await connect({ pservers: addresses, blockSize: 4, initializer: false });
    clients.push(reader);
    expect(await reader.listTables()).toEqual([{ name: 'emb', dim, buckets: 16 }]);
    const read = await reader.lookup('emb', all);
    expect([...read]).toEqual(rowsOf(expected, all));
  });

  it('streams a push above the message limit and splits a lookup, rows intact', async () => {
    const small = await connect({
      pservers: addresses,
      blockSize: 4,
      initializer: false,
      maxMessageBytes: 1 << 20,
    });
    clients.push(small);
    // 150 000 distinct ids × (8 + 12) bytes: about 1.5 MB per shard, over the 1 MiB limit; a
    // lookup of them takes about two GetRows per shard (13 bytes a row under 512 KiB).
    const ids = BigInt64Array.from({ length: 150_000 }, (_, i) => BigInt(1_000_000 + i));
    const grads = new Float32Array(ids.length * dim).fill(0.125);
    await small.step((ctx) => ctx.pushRows('emb', ids, grads));
    const rows = await small.step((ctx) => ctx.lookup('emb', ids));
    expect(rows.every((x) => x === 0.375)).toBe(true);
  });
});

describe('sparse tables through a master', () => {
  it('are created by the one elected initializer, and a reader attached to the master looks them up', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      masters: 1,
      leaseTtlSeconds: 2,
      blockSize: 4,
    });
    const clients: PserverClient[] = [];
    try {
      const trainers = await Promise.all(
        [0, 1].map(() => connect({ master: cluster.masterAddresses })),
      );
      clients.push(...trainers);
      // Both call initParams with the same model; the master elects one, the other waits.
      await Promise.all(
        trainers.map((t) => t.initParams({ w: new Float32Array(6) }, sgd, { tables: [table] })),
      );
      const ids = BigInt64Array.from([11n, -5n, 11n, 2n ** 62n]);
      for (const trainer of trainers)
        await trainer.step(async (ctx) => {
          await ctx.pushRows('emb', ids, gradsFor(ids));
          await ctx.sendGrads({ w: new Float32Array(6).fill(1) });
        });
      const expected = expectedRows([ids, ids]);

      const reader = await connect({ master: cluster.masterAddresses });
      clients.push(reader);
      expect([...(await reader.lookup('emb', ids))]).toEqual(rowsOf(expected, ids));
      expect([...(await reader.getParams(['w'], Float32Array)).w]).toEqual(Array(6).fill(-2));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await cluster.stop();
    }
  });
});
