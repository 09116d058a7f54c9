import { connect } from '@pserver/client';
import { bucketOfBigInt, tableShardOf } from '@pserver/proto';
import { startPserverProcess, stopAllProcesses, tempDir } from '@pserver/testing';
import { ckpt } from './ckpt-cli';

// ckpt digest: the same training on standalone jobs of 1 and 3 shards leaves the same state, so
// their checkpoints have one digest — whatever shard holds which block and row, at whatever
// table step; one more push, at 2 shards, gives another.
afterAll(stopAllProcesses);

const dim = 4;
const buckets = 32;
const spec = {
  name: 'emb',
  dim,
  buckets,
  initializer: { uniform: { low: -0.5, high: 0.5 }, seed: 3 },
  // Row-wise Adagrad keeps a state float a row; counting admission keeps ids pending.
  optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.1 } },
  admission: { counting: { minCount: 2 } },
};

/** An id placed on each shard of 3: every push reaches every shard, at any shard count. */
const anchors = [0, 1, 2].map((shard) => {
  let id = BigInt(1000 * shard) - 7n;
  while (tableShardOf(spec.name, bucketOfBigInt(id, buckets), 3) !== shard) id++;
  return id;
});

interface Digest {
  digest: string;
  shards: number;
  tensors: number;
  elements: number;
  rows: number;
  tables: { name: string; rows: number; pending: number; digest: string }[];
  checkpoints: { index: number; path: string; chainFiles: number }[];
}

/**
 * Trains a standalone job of `shards` shards for `steps` steps — a dense tensor of 5 blocks
 * under Adam, and the table: the anchors every step, admitted at the second, and one id seen
 * once per step of the first four, left pending — then stops its pservers (SIGTERM: each commits
 * a final checkpoint) and returns the job's checkpoint directory.
 */
async function train(shards: number, steps: number): Promise<string> {
  const dir = tempDir(`ckpt-digest-${shards}`);
  const pservers = await Promise.all(
    Array.from({ length: shards }, (_, i) =>
      startPserverProcess(['--index', String(i), '--shards', String(shards)], {
        checkpointDir: dir,
        name: `pserver-${shards}-${i}`,
      }),
    ),
  );
  const trainer = await connect({ pservers: pservers.map((p) => p.address), blockSize: 64 });
  try {
    await trainer.initParams(
      { w: Float32Array.from({ length: 300 }, (_, k) => k / 100) },
      { adam: {}, learningRate: { base: 0.01 } },
      { tables: [spec] },
    );
    for (let step = 1; step <= steps; step++) {
      const ids = BigInt64Array.from(step <= 4 ? [...anchors, BigInt(-50 - step)] : anchors);
      await trainer.step(async (ctx) => {
        await ctx.pushRows(
          'emb',
          ids,
          Float32Array.from({ length: ids.length * dim }, (_, k) => (k % 7) - step),
        );
        await ctx.sendGrads({ w: Float32Array.from({ length: 300 }, (_, k) => (k % 3) - 1) });
      });
    }
  } finally {
    await trainer.close();
  }
  for (const pserver of pservers)
    expect(await pserver.process.stop()).toEqual({ code: 0, signal: null });
  return dir;
}

function digestOf(dir: string): Digest {
  const run = ckpt('digest', '--json', dir);
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  return JSON.parse(run.stdout) as Digest;
}

describe('ckpt digest', () => {
  it('is the same for the same state at 1 and 3 shards, and changes with one more push', async () => {
    const one = await train(1, 4);
    const three = await train(3, 4);
    const more = await train(2, 5);

    const d1 = digestOf(one);
    const d3 = digestOf(three);
    const d2 = digestOf(more);
    const counts = { tensors: 5, elements: 300, rows: 3 };
    const table = { name: 'emb', rows: 3, pending: 4 };
    expect(d1).toMatchObject({ ...counts, shards: 1, tables: [table] });
    expect(d3).toMatchObject({ ...counts, shards: 3, tables: [table] });
    expect(d3.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(d3.checkpoints.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(d3.digest).toBe(d1.digest);
    expect(d3.tables[0]!.digest).toBe(d1.tables[0]!.digest);
    // The same rows, tensors and pending ids, other values: another digest.
    expect(d2).toMatchObject({ ...counts, shards: 2, tables: [table] });
    expect(d2.digest).not.toBe(d1.digest);

    const text = ckpt('digest', three);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(`digest ${d1.digest}\n`);
    expect(text.stdout).toContain(
      '3 shards, 5 tensors and blocks (300 elements), 1 tables (3 rows)\n',
    );
    expect(text.stdout).toMatch(
      /^ {2}table emb {2}3 rows {2}4 pending admission {2}[0-9a-f]{64}$/m,
    );
    expect(text.stdout).toMatch(/^ {2}shard 2: shard-2\/\S+\.ckpt/m);
  }, 180_000);
});
