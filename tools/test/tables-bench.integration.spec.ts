import { SparseTable } from '@pserver/embedding';
import { stopAllProcesses } from '@pserver/testing';
import {
  ensureRedisServer,
  RedisTable,
  startRedisServer,
  type RedisServer,
} from '../bench/tables-redis';
import { makeWorkload, type Batch } from '../bench/tables-workload';

// What the table benchmark compares must be the same work on both sides: the workload's batches
// hold distinct ids as a client sends them, and the Redis driver's push leaves the same row
// bytes as the pserver's table for the same gradients.

afterAll(stopAllProcesses);

const hex = (batch: Batch): string[] => {
  const ids: string[] = [];
  for (let i = 0; i < batch.ids.length; i += 8) ids.push(batch.ids.toString('hex', i, i + 8));
  return ids;
};

describe('table benchmark workload', () => {
  const options = { idCount: 20_000, batchSize: 1024, zipfBatches: 16, zipfS: 1.05, seed: 42 };

  it('fills every id once, draws skewed batches of distinct ids, the same for a seed', () => {
    const workload = makeWorkload(options);
    const filled = workload.fill.flatMap(hex);
    expect(filled.length).toBe(options.idCount);
    expect(new Set(filled).size).toBe(options.idCount);
    // Spread over the int64 range: not small, not consecutive.
    expect(filled.filter((id) => id.endsWith('00000000')).length).toBeLessThan(5);

    const all = new Set(filled);
    for (const batch of workload.zipf) {
      const ids = hex(batch);
      expect(batch.requested).toBe(options.batchSize);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.every((id) => all.has(id))).toBe(true);
      // Zipf(1.05): popular ids repeat within a batch, so dedup removes a good share.
      expect(ids.length).toBeLessThan(options.batchSize * 0.8);
      expect(batch.keys?.map((k) => k.toString('hex'))).toEqual(ids);
    }
    // Rank 0 (the most popular id) is the first fill id and in every batch.
    expect(workload.zipf.every((b) => hex(b).includes(filled[0]!))).toBe(true);

    const again = makeWorkload(options);
    expect(again.zipf.map(hex)).toEqual(workload.zipf.map(hex));
    const other = makeWorkload({ ...options, seed: 43 });
    expect(other.zipf.map(hex)).not.toEqual(workload.zipf.map(hex));
  });
});

describe('table benchmark Redis driver', () => {
  let server: RedisServer;
  beforeAll(async () => {
    ensureRedisServer();
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.process.stop();
  });

  it('stores the rows a pserver table holds after the same row-wise Adagrad pushes', async () => {
    const dim = 5;
    const learningRate = 0.1;
    const redis = new RedisTable({ port: server.port, dim, learningRate, keysPerCommand: 3 }, 64);
    const table = new SparseTable({
      name: 'emb',
      dim,
      buckets: 16,
      shardIndex: 0,
      shardCount: 1,
      init: { kind: 'zeros' },
      seedLo: 0,
      seedHi: 0,
      optimizer: { rowwiseAdagrad: {}, learningRate: { base: learningRate } },
    });
    const batchOf = (...values: bigint[]): Batch => {
      const ids = Buffer.from(BigInt64Array.from(values).buffer);
      return { requested: values.length, ids };
    };
    const gradsFor = (n: number, scale: number): Float32Array =>
      Float32Array.from({ length: n * dim }, (_, i) => Math.sin(i + scale) * scale);
    const pushes: [Batch, Float32Array][] = [
      [batchOf(1n, -2n, 2n ** 62n + 7n, -(2n ** 63n)), gradsFor(4, 0.5)],
      [batchOf(-2n, 9n, 1n), gradsFor(3, 2)],
      [batchOf(2n ** 62n + 7n, 1n, 9n, 10n, 11n), gradsFor(5, -1.5)],
    ];
    try {
      const created = [];
      for (const [batch, grads] of pushes) {
        created.push(await redis.push(batch, grads));
        table.apply(table.checkPush({ ids: batch.ids, grads: Buffer.from(grads.buffer) }));
      }
      expect(created).toEqual([4, 1, 2]);

      const all = batchOf(1n, -2n, 2n ** 62n + 7n, -(2n ** 63n), 9n, 10n, 11n, 12n);
      expect(await redis.lookup(all)).toBe(7);
      const expected = table.getRows(all.ids).values;
      const stored = await redis.client.mgetBuffer(
        Array.from({ length: 8 }, (_, i) => all.ids.subarray(i * 8, i * 8 + 8)),
      );
      expect(stored[7]).toBeNull();
      for (let k = 0; k < 7; k++) {
        const row = stored[k]!;
        expect(row.length).toBe((dim + 1) * 4);
        const values = Buffer.from(row.subarray(0, dim * 4));
        const want = Buffer.from(expected.buffer, k * dim * 4, dim * 4);
        expect({ k, values: values.toString('hex') }).toEqual({ k, values: want.toString('hex') });
      }
      expect(await redis.dbsize()).toBe(7);
      expect(await redis.usedMemory()).toBeGreaterThan(0);
    } finally {
      redis.close();
    }
  });
});
