import fs from 'node:fs';
import path from 'node:path';
import {
  checksumAlgorithm,
  checkpointPath,
  ManifestStore,
  writeCheckpointFile,
} from '@pserver/checkpoint';
import { bucketsOfIds, tableShards, type TableSpec } from '@pserver/proto';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
} from '@pserver/testing';

import { ckpt, readSafetensors } from './ckpt-cli';

afterAll(stopAllProcesses);

const spec: TableSpec & { name: string; dim: number; buckets: number } = {
  name: 'emb',
  dim: 3,
  buckets: 16,
  initializer: { normal: { mean: 0, stddev: 0.1 }, seed: 7 },
  // Row-wise Adagrad: a state float after the values, which the export must leave out.
  optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.5 } },
};
const shardCount = 2;
const shardsOfBuckets = tableShards(spec.name, spec.buckets, shardCount);
const shardOfId = (id: bigint): number =>
  shardsOfBuckets[bucketsOfIds(new BigInt64Array([id]), spec.buckets)[0]!]!;

describe('tools/ckpt with tables', () => {
  // Unordered, negative, large: the export must sort them as signed 64-bit integers.
  const ids = [
    5n,
    -1n,
    2n ** 40n + 3n,
    17n,
    -(2n ** 62n),
    0n,
    123456789n,
    2n ** 63n - 1n,
    42n,
    -7n,
  ];
  /** What GetRows returned for each id before the pservers stopped, dim floats each. */
  const rows = new Map<bigint, Buffer>();
  let dir: string;

  beforeAll(async () => {
    dir = tempDir('ckpt-tables');
    const shards = await Promise.all(
      [0, 1].map((i) =>
        startPserverProcess(['--index', String(i), '--shards', String(shardCount)], {
          checkpointDir: dir,
          name: `pserver-${i}`,
        }),
      ),
    );
    const drivers = shards.map((s) => new PserverDriver(s.address));
    const epochs = await Promise.all(drivers.map((d) => d.epoch()));
    const ctx = (i: number, step = 0) => ({ trainerId: 1, step, shardEpoch: epochs[i] });
    for (const [i, driver] of drivers.entries()) {
      await driver.initTable(ctx(i), spec);
      await driver.finishInitParams(ctx(i));
    }
    const mine = [0, 1].map((i) => ids.filter((id) => shardOfId(id) === i));
    // Both shards must hold rows, or the test would not show the merge.
    expect(mine.map((m) => m.length > 0)).toEqual([true, true]);
    for (const [i, driver] of drivers.entries()) {
      const own = BigInt64Array.from(mine[i]!);
      const grads = Float32Array.from({ length: own.length * 3 }, (_, k) => (k % 5) - 2.5);
      for (const step of [1, 2]) {
        await driver.sendGrads(
          ctx(i, step),
          [],
          [{ table: 'emb', ids: bytesOf(own), grads: bytesOf(grads) }],
        );
      }
      const got = await driver.getRows(ctx(i), 'emb', bytesOf(own));
      const found = Buffer.from(got.found);
      const values = Buffer.from(got.values);
      own.forEach((id, k) => {
        expect((found[k >> 3]! >> (k & 7)) & 1).toBe(1);
        rows.set(id, values.subarray(k * 12, (k + 1) * 12));
      });
      driver.close();
    }
    // SIGTERM: each shard commits a final checkpoint, tables included.
    for (const shard of shards)
      expect(await shard.process.stop()).toEqual({ code: 0, signal: null });
  });

  it('exports a two-shard table as ids and values sorted by id, as GetRows read them', () => {
    const out = path.join(dir, 'model.safetensors');
    const run = ckpt('export', '--out', out, dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const tensors = readSafetensors(out);
    expect([...tensors.keys()].sort()).toEqual(['emb.ids', 'emb.values']);
    const sorted = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(tensors.get('emb.ids')).toMatchObject({ dtype: 'I64', shape: [ids.length] });
    const idsData = tensors.get('emb.ids')!.data;
    expect(sorted.map((_, k) => idsData.readBigInt64LE(8 * k))).toEqual(sorted);
    expect(tensors.get('emb.values')).toMatchObject({ dtype: 'F32', shape: [ids.length, 3] });
    expect(
      Buffer.compare(
        tensors.get('emb.values')!.data,
        Buffer.concat(sorted.map((id) => rows.get(id)!)),
      ),
    ).toBe(0);
    // Deterministic: a second export gives the same bytes.
    const again = path.join(dir, 'again.safetensors');
    expect(ckpt('export', '--out', again, dir).status).toBe(0);
    expect(fs.readFileSync(again).equals(fs.readFileSync(out))).toBe(true);
  });

  it('inspects a file with a table: the final checkpoint, a full one (a delta would outweigh the empty table’s)', () => {
    const manifest = JSON.parse(
      fs.readFileSync(path.join(dir, 'shard-0', 'manifest.json'), 'utf8'),
    );
    const [latest] = manifest.checkpoints;
    const run = ckpt('inspect', path.join(dir, latest.path));
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/header: format 2, shard 0 of 2, .*, full\n/);
    const own = ids.filter((id) => shardOfId(id) === 0).length;
    expect(run.stdout).toMatch(
      new RegExp(
        `tables: 1\\n  emb  dim 3  buckets 16  ${own} rows  rowwise-adagrad \\(stride 4: 3 values \\+ 1 state\\)  step 2  \\d+ bytes\\n`,
      ),
    );
    expect(run.stdout).toContain('chain: none (a full checkpoint, committed in');
  });

  it('verifies that table rows are in their shard’s buckets', async () => {
    const ok = ckpt('verify', dir);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/OK {6}shard-0\/\S+ .* 1 tables, \d+ rows in their buckets/);

    // A shard-0 checkpoint holding a row of one of shard 1's buckets: intact bytes, wrong place.
    const bad = tempDir('ckpt-tables-misplaced');
    const stray = ids.find((id) => shardOfId(id) === 1)!;
    const store = await ManifestStore.open(bad, 0, shardCount);
    const written = await writeCheckpointFile(
      {
        index: 0,
        shardCount,
        shardEpoch: store.epoch,
        seq: 1,
        uuid: 'misplaced',
        blockSize: 0,
        job: '',
        createdUnixNs: '1764460800000000000',
        updatesApplied: 1,
        tensors: [],
        tables: [
          {
            spec,
            step: 1,
            stride: 4,
            pendingIds: new Uint8Array(0),
            pendingCounts: new Uint8Array(0),
            rows: 1,
            sections: [
              {
                ids: bytesOf(new BigInt64Array([stray])),
                values: bytesOf(new Float32Array([1, 2, 3, 4])),
                lastSeen: bytesOf(new Uint32Array([1])),
                counts: bytesOf(new Uint32Array([1])),
                firstBucket: bucketsOfIds(new BigInt64Array([stray]), spec.buckets!)[0]!,
                lastBucket: bucketsOfIds(new BigInt64Array([stray]), spec.buckets!)[0]!,
              },
            ],
          },
        ],
        marks: [],
      },
      { root: bad, path: checkpointPath(0, store.epoch, 1, 'misplaced') },
    );
    await store.commit(
      {
        uuid: 'misplaced',
        path: written.path,
        size: written.size,
        checksumAlgorithm,
        checksum: written.checksum,
        timestampNs: '1764460800000000000',
        shardEpoch: store.epoch,
        index: 0,
        seq: 1,
        updatesApplied: 1,
        formatVersion: written.formatVersion,
        chain: [],
      },
      3,
    );
    const broken = ckpt('verify', bad);
    expect(broken.status).toBe(1);
    expect(broken.stdout).toContain(
      `BROKEN  ${written.path}: table emb: 1 ids in buckets of other shards (first: id ${stray}`,
    );
  });
});
