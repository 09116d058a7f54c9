import fs from 'node:fs';
import path from 'node:path';
import { metaFromJson, readTableBucket, writePoints, type WritePoint } from '@pserver/checkpoint';
import { bucketsOfIds } from '@pserver/proto';
import type { RequestContext, SparseGrad, TableSpec, Tensor } from '@pserver/proto';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  type PserverProcess,
} from '@pserver/testing';

afterAll(stopAllProcesses);

// Incremental checkpoints of a shard with a table, through real pserver processes: the file
// chain (a full checkpoint, then deltas of the rows pushed and the ids evicted), its recovery
// after kill -9, a kill at each write point of a delta, and a corrupt delta.

const spec: TableSpec = {
  name: 'emb',
  dim: 4,
  buckets: 64,
  initializer: { normal: { mean: 0, stddev: 0.1 }, seed: 11 },
  optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.3 } },
  // 240 ids pushed into at most 200 rows: pushes evict, so deltas carry evictions.
  eviction: { maxRows: 200 },
};
const dense: Tensor = {
  name: 'w',
  elementType: 'ELEMENT_TYPE_FLOAT32',
  content: bytesOf(new Float32Array([1, 2, 3])),
};
const universe = Array.from({ length: 240 }, (_, k) => (k % 2 === 0 ? k : -(2 ** 40) - k));
const allIds = bytesOf(BigInt64Array.from(universe.map(BigInt)));

interface Manifest {
  checkpoints: { path: string; size: string; chain?: { path: string }[] }[];
}

class Shard {
  constructor(
    readonly pserver: PserverProcess,
    readonly driver: PserverDriver,
    readonly epoch: number,
  ) {}

  static async start(
    dir: string,
    args: string[] = [],
    env: Record<string, string> = {},
  ): Promise<Shard> {
    const pserver = await startPserverProcess(['--checkpoint-deltas', '3', ...args], {
      checkpointDir: dir,
      env,
      name: 'pserver-deltas',
    });
    const driver = new PserverDriver(pserver.address);
    return new Shard(pserver, driver, await driver.epoch());
  }

  ctx(step = 0): RequestContext {
    return { trainerId: 1, step, shardEpoch: this.epoch };
  }

  async initialize(): Promise<void> {
    await this.driver.initParam(this.ctx(), dense, { sgd: {}, learningRate: { base: 0.1 } });
    await this.driver.initTable(this.ctx(), spec);
    await this.driver.finishInitParams(this.ctx());
  }

  /** Step 1: a row for each of the first 200 ids. */
  async fill(): Promise<void> {
    const picked = universe.slice(0, 200);
    const sparse: SparseGrad = {
      table: 'emb',
      ids: bytesOf(BigInt64Array.from(picked.map(BigInt))),
      grads: bytesOf(new Float32Array(4 * picked.length).fill(0.5)),
    };
    const reply = await this.driver.sendGrads(this.ctx(1), [], [sparse]);
    expect(reply.outcome).toBe('PUSH_OUTCOME_APPLIED');
  }

  /** Steps `from..to` (from 2), each pushing 4 ids of a window that moves along the universe. */
  async train(from: number, to: number): Promise<void> {
    for (let step = from; step <= to; step++) {
      const picked = [0, 1, 2, 7].map((k) => universe[(190 + step * 3 + k) % universe.length]!);
      const sparse: SparseGrad = {
        table: 'emb',
        ids: bytesOf(BigInt64Array.from(picked.map(BigInt))),
        grads: bytesOf(Float32Array.from({ length: 16 }, (_, i) => Math.sin(step + i))),
      };
      const grad: Tensor = { ...dense, content: bytesOf(new Float32Array([step, 1, -1])) };
      const reply = await this.driver.sendGrads(this.ctx(step), [grad], [sparse]);
      expect(reply.outcome).toBe('PUSH_OUTCOME_APPLIED');
    }
  }

  /** Every byte a client can read: the dense tensor, every id's row and found bit. */
  async bytes(): Promise<string> {
    const params = await this.driver.getParams(this.ctx(), ['w']);
    const rows = await this.driver.getRows(this.ctx(), 'emb', allIds);
    return [params.params[0]!.content, rows.values, rows.found]
      .map((b) => Buffer.from(b).toString('hex'))
      .join('/');
  }

  save(): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.driver.client.saveCheckpoint({}, { deadline: Date.now() + 30_000 }, (err, reply) =>
        err ? reject(err) : resolve(reply),
      ),
    );
  }

  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.driver.close();
    await this.pserver.process.stop({ signal });
  }
}

function manifest(dir: string): Manifest {
  return JSON.parse(fs.readFileSync(path.join(dir, 'shard-0', 'manifest.json'), 'utf8'));
}

const chainLengths = (dir: string): number[] =>
  manifest(dir).checkpoints.map((m) => m.chain?.length ?? 0);

describe('incremental checkpoints of a shard with a table', () => {
  it('write a full checkpoint, then deltas, then a full one again; base + deltas restore every byte', async () => {
    const dir = tempDir('deltas');
    const shard = await Shard.start(dir, ['--checkpoint-retain', '8']);
    await shard.initialize();
    await shard.fill();
    const states: string[] = [];
    for (let round = 0; round < 6; round++) {
      if (round > 0) await shard.train(round * 3 + 1, round * 3 + 3);
      await shard.save();
      states.push(await shard.bytes());
    }
    // FinishInitParams wrote a full checkpoint of the empty table; a delta of the fill would have
    // outgrown half of it, so a full one followed; then 3 deltas (--checkpoint-deltas 3), a full
    // one, and a delta on that.
    const kinds = shard.pserver.process
      .jsonLines()
      .filter((e) => e.msg === 'checkpoint committed')
      .map((e) => e['kind']);
    expect(kinds).toEqual(['full', 'full', 'delta', 'delta', 'delta', 'full', 'delta']);
    expect(chainLengths(dir)).toEqual([1, 0, 3, 2, 1, 0, 0]);
    // A delta of a few rows is far smaller than the full checkpoint it extends.
    const metas = manifest(dir).checkpoints;
    expect(Number(metas[0]!.size) * 4).toBeLessThan(Number(metas[1]!.size));
    // The deltas carried evictions: more ids were pushed than max_rows allows.
    const status = await shard.driver.status();
    expect(status.tables[0]).toMatchObject({ rows: 200 });
    await shard.stop();

    // Restore the chain, extend it with a delta, and restore the longer chain.
    const restarted = await Shard.start(dir, ['--checkpoint-retain', '8']);
    expect(await restarted.bytes()).toBe(states[5]);
    await restarted.train(31, 36);
    await restarted.save();
    expect(chainLengths(dir)[0]).toBe(2);
    const afterDelta = await restarted.bytes();
    await restarted.stop();
    const again = await Shard.start(dir);
    expect(await again.bytes()).toBe(afterDelta);
    await again.stop();
  });

  describe.each(writePoints.map((point) => [point]))(
    'killed at %s of a delta',
    (point: WritePoint) => {
      it('restarts with the last committed chain', async () => {
        const dir = tempDir('deltas-crash');
        const setup = await Shard.start(dir, ['--checkpoint-retain', '2']);
        await setup.initialize();
        await setup.fill();
        // A full checkpoint of the filled table, and a delta on it.
        await setup.save();
        await setup.train(2, 4);
        await setup.save();
        expect(chainLengths(dir)).toEqual([1, 0]);
        const committed = await setup.bytes();
        await setup.stop();

        const victim = await Shard.start(dir, ['--checkpoint-retain', '2'], {
          PSERVER_FAILPOINT: point,
        });
        await victim.train(8, 10);
        const newer = await victim.bytes();
        await expect(victim.save()).rejects.toBeDefined();
        expect(await victim.pserver.process.exited).toEqual({ code: null, signal: 'SIGKILL' });

        const restarted = await Shard.start(dir, ['--checkpoint-retain', '2']);
        const committedNewer = point === 'after-commit-before-delete';
        expect(await restarted.bytes()).toBe(committedNewer ? newer : committed);
        // The killed save was a second delta on the recovered chain.
        expect(chainLengths(dir)[0]).toBe(committedNewer ? 2 : 1);
        const files = fs.readdirSync(path.join(dir, 'shard-0'));
        expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
        // Every file a retained chain names is there.
        for (const meta of manifest(dir).checkpoints)
          for (const file of [...(meta.chain ?? []), meta])
            expect(fs.existsSync(path.join(dir, file.path))).toBe(true);
        await restarted.stop();
      });
    },
  );

  it('one bucket read through the index of each file of a chain equals the rows the pserver serves', async () => {
    const dir = tempDir('deltas-bucket');
    const shard = await Shard.start(dir);
    await shard.initialize();
    await shard.fill();
    await shard.save();
    await shard.train(2, 4);
    await shard.save();
    await shard.train(5, 10);
    await shard.save();
    const meta = metaFromJson(manifest(dir).checkpoints[0]);
    expect(meta.chain).toHaveLength(2);
    const bucketOf = bucketsOfIds(allIds, spec.buckets!);
    const served = await shard.driver.getRows(shard.ctx(), 'emb', allIds);
    const dim = spec.dim!;
    for (const bucket of [0, 17, 63]) {
      // What the chain says the bucket holds: the full file's rows, then the delta's.
      const rows = new Map<string, string>();
      const { parts } = await readTableBucket(dir, meta, 'emb', bucket);
      for (const part of parts) {
        for (let k = 0; k < part.evictedIds.byteLength / 8; k++)
          rows.delete(Buffer.from(part.evictedIds.subarray(8 * k, 8 * k + 8)).toString('hex'));
        for (let k = 0; k < part.rows.ids.byteLength / 8; k++) {
          const values = part.rows.values.subarray(
            4 * part.stride * k,
            4 * (part.stride * k + dim),
          );
          rows.set(
            Buffer.from(part.rows.ids.subarray(8 * k, 8 * k + 8)).toString('hex'),
            Buffer.from(values).toString('hex'),
          );
        }
      }
      // What the pserver serves for the ids of that bucket that have a row.
      const expected = new Map<string, string>();
      universe.forEach((_, k) => {
        if (bucketOf[k] !== bucket || ((served.found[k >> 3]! >> (k & 7)) & 1) === 0) return;
        expected.set(
          Buffer.from(allIds.subarray(8 * k, 8 * k + 8)).toString('hex'),
          Buffer.from(served.values.subarray(4 * dim * k, 4 * dim * (k + 1))).toString('hex'),
        );
      });
      expect(rows).toEqual(expected);
    }
    await shard.stop();
  });

  it('falls back through the chain past a delta with one flipped byte', async () => {
    const dir = tempDir('deltas-corrupt');
    const shard = await Shard.start(dir);
    await shard.initialize();
    await shard.fill();
    await shard.save();
    await shard.train(2, 4);
    await shard.save();
    await shard.train(5, 7);
    await shard.save();
    const older = await shard.bytes();
    await shard.train(8, 10);
    await shard.save();
    // Newest first: the third delta on the fill's full checkpoint, the second, the first.
    expect(chainLengths(dir)).toEqual([3, 2, 1]);
    await shard.stop();

    const newest = path.join(dir, manifest(dir).checkpoints[0]!.path);
    const content = fs.readFileSync(newest);
    content[Math.floor(content.length / 2)]! ^= 0x10;
    fs.writeFileSync(newest, content);
    const restarted = await Shard.start(dir);
    expect(await restarted.bytes()).toBe(older);
    expect(fs.existsSync(`${newest}.broken`)).toBe(true);
    const logged = restarted.pserver.process
      .jsonLines()
      .find((e) => e.msg === 'checkpoint unusable, trying the previous one');
    expect(logged?.['file']).toBe(path.relative(dir, newest));
    await restarted.stop();
  });

  it('a delta of 1 % of a 100,000-row table is under 1/20 of the full checkpoint', async () => {
    const dir = tempDir('deltas-size');
    const shard = await Shard.start(dir);
    const big: TableSpec = { ...spec, name: 'big', dim: 16, buckets: 1024, eviction: {} };
    await shard.driver.initTable(shard.ctx(), big);
    await shard.driver.finishInitParams(shard.ctx());
    const rows = 100_000;
    const perPush = 10_000;
    const push = async (step: number, first: number, n: number): Promise<void> => {
      const sparse: SparseGrad = {
        table: 'big',
        ids: bytesOf(BigInt64Array.from({ length: n }, (_, k) => BigInt(first + k))),
        grads: bytesOf(new Float32Array(n * 16).fill(0.25)),
      };
      await shard.driver.sendGrads(shard.ctx(step), [], [sparse]);
    };
    for (let k = 0; k < rows / perPush; k++) await push(k + 1, k * perPush, perPush);
    await shard.save();
    await push(100, 5_000, rows / 100);
    await shard.save();
    const [delta, full] = manifest(dir).checkpoints;
    expect(delta!.chain).toHaveLength(1);
    expect(Number(delta!.size) * 20).toBeLessThan(Number(full!.size));
    await shard.stop();
  });
});
