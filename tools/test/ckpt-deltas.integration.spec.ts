import fs from 'node:fs';
import path from 'node:path';
import type { SparseGrad, TableSpec, Tensor } from '@pserver/proto';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  type PserverProcess,
} from '@pserver/testing';

import { ckpt, readSafetensors } from './ckpt-cli';

afterAll(stopAllProcesses);

// The checkpoint tool on a real pserver's delta chains: a full checkpoint, then deltas of the
// rows pushed and the ids evicted (max_rows makes pushes evict).

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
const universe = Array.from({ length: 240 }, (_, k) => BigInt(k % 2 === 0 ? k : -(2 ** 40) - k));

interface Meta {
  uuid: string;
  path: string;
  size: string;
  chain?: { uuid: string; path: string; size: string }[];
}

const metas = (dir: string): Meta[] =>
  JSON.parse(fs.readFileSync(path.join(dir, 'shard-0', 'manifest.json'), 'utf8')).checkpoints;

async function startShard(
  dir: string,
  deltas: number,
): Promise<{ pserver: PserverProcess; driver: PserverDriver; epoch: number }> {
  const pserver = await startPserverProcess(
    ['--checkpoint-deltas', String(deltas), '--checkpoint-retain', '8'],
    { checkpointDir: dir, name: 'pserver-ckpt-deltas' },
  );
  const driver = new PserverDriver(pserver.address);
  return { pserver, driver, epoch: await driver.epoch() };
}

describe('tools/ckpt with delta chains', () => {
  let dir: string;
  /** What GetRows read for the ids present at the end, sorted by id, dim floats each. */
  const present = new Map<bigint, Buffer>();
  let denseBytes: Buffer;

  beforeAll(async () => {
    dir = tempDir('ckpt-deltas');
    const { pserver, driver, epoch } = await startShard(dir, 3);
    const ctx = (step = 0) => ({ trainerId: 1, step, shardEpoch: epoch });
    await driver.initParam(ctx(), dense, { sgd: {}, learningRate: { base: 0.1 } });
    await driver.initTable(ctx(), spec);
    await driver.finishInitParams(ctx());
    const push = async (step: number, ids: bigint[]): Promise<void> => {
      const sparse: SparseGrad = {
        table: 'emb',
        ids: bytesOf(BigInt64Array.from(ids)),
        grads: bytesOf(Float32Array.from({ length: 4 * ids.length }, (_, i) => Math.sin(step + i))),
      };
      const grad: Tensor = { ...dense, content: bytesOf(new Float32Array([step, 1, -1])) };
      const reply = await driver.sendGrads(ctx(step), [grad], [sparse]);
      expect(reply.outcome).toBe('PUSH_OUTCOME_APPLIED');
    };
    // Steps from..to, each pushing 4 ids of a window moving past the first 200.
    const train = async (from: number, to: number): Promise<void> => {
      for (let step = from; step <= to; step++)
        await push(
          step,
          [0, 1, 2, 7].map((k) => universe[(190 + step * 3 + k) % universe.length]!),
        );
    };
    await push(1, universe.slice(0, 200));
    // A full checkpoint of the filled table (a delta would outweigh half of the empty table's
    // full checkpoint that FinishInitParams wrote); then two deltas on it.
    await driver.saveCheckpoint();
    for (const [from, to] of [
      [2, 4],
      [5, 7],
    ] as const) {
      await train(from, to);
      await driver.saveCheckpoint();
    }
    expect(metas(dir).map((m) => m.chain?.length ?? 0)).toEqual([2, 1, 0, 0]);

    const rows = await driver.getRows(ctx(), 'emb', bytesOf(BigInt64Array.from(universe)));
    const found = Buffer.from(rows.found);
    const values = Buffer.from(rows.values);
    universe.forEach((id, k) => {
      if ((found[k >> 3]! >> (k & 7)) & 1) present.set(id, values.subarray(16 * k, 16 * (k + 1)));
    });
    expect(present.size).toBe(200);
    denseBytes = Buffer.from((await driver.getParams(ctx(), ['w'])).params[0]!.content);
    driver.close();
    await pserver.process.stop({ signal: 'SIGKILL' });
  });

  it('inspects a delta: its chain, the rows each file changed and evicted, the rows restored', () => {
    const [newest] = metas(dir);
    const chain = newest!.chain!;
    const run = ckpt('inspect', path.join(dir, newest!.path));
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`header: format 3, shard 0 of 1, .*, delta on ${chain[1]!.uuid}\\n`),
    );
    expect(run.stdout).toMatch(
      /\n {2}emb {2}dim 4 {2}buckets 64 {2}delta: \d+ rows changed, \d+ ids evicted, 200 rows restored {2}rowwise-adagrad/,
    );
    const files = [...chain, newest!];
    const total = files.reduce((n, f) => n + Number(f.size), 0);
    expect(run.stdout).toContain(
      `chain: 3 files, ${total} bytes (committed in shard-0/manifest.json)\n` +
        `  full   ${chain[0]!.path}  ${chain[0]!.size} bytes  emb 200 rows\n`,
    );
    const deltas = [
      ...run.stdout.matchAll(
        /\n {2}delta {2}(\S+) {2}(\d+) bytes {2}emb (\d+) rows changed, (\d+) ids evicted/g,
      ),
    ];
    expect(deltas.map((m) => [m[1], m[2]])).toEqual(
      files.slice(1).map((f) => [f.path, String(f.size)]),
    );
    // The deltas hold a few rows each, and evictions: the window pushed ids past max_rows.
    expect(deltas.every((m) => Number(m[3]) > 0 && Number(m[3]) < 20)).toBe(true);
    expect(deltas.some((m) => Number(m[4]) > 0)).toBe(true);

    const full = ckpt('inspect', path.join(dir, chain[0]!.path));
    expect(full.status).toBe(0);
    expect(full.stdout).toMatch(/, full\n/);
    expect(full.stdout).toMatch(/\n {2}emb {2}dim 4 {2}buckets 64 {2}200 rows {2}/);
    expect(full.stdout).toContain('chain: none (a full checkpoint, committed in');

    // A directory: every committed file, newest first, each with its chain.
    const every = ckpt('inspect', dir);
    expect(every.status).toBe(0);
    expect([...every.stdout.matchAll(/^== (\S+)$/gm)].map((m) => m[1])).toEqual(
      metas(dir).map((m) => m.path),
    );
    expect(every.stdout.match(/^chain: /gm)).toHaveLength(4);
  });

  it('exports and digests what the chain restores, as a full checkpoint of it', async () => {
    const fromDeltas = path.join(dir, 'deltas.safetensors');
    const run = ckpt('export', '--out', fromDeltas, dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const tensors = readSafetensors(fromDeltas);
    const sorted = [...present.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const ids = tensors.get('emb.ids')!;
    expect(ids.shape).toEqual([200]);
    expect(sorted.map((_, k) => ids.data.readBigInt64LE(8 * k))).toEqual(sorted);
    expect(tensors.get('emb.values')!.shape).toEqual([200, 4]);
    expect(
      tensors.get('emb.values')!.data.equals(Buffer.concat(sorted.map((id) => present.get(id)!))),
    ).toBe(true);
    expect(tensors.get('w')!.data.equals(denseBytes)).toBe(true);

    const digestOfChain = ckpt('digest', '--json', dir);
    expect(digestOfChain.status).toBe(0);

    // The pserver restores the chain and, with no deltas allowed, writes it as a full checkpoint.
    const before = metas(dir)[0]!.path;
    const { pserver, driver } = await startShard(dir, 0);
    await driver.saveCheckpoint();
    driver.close();
    await pserver.process.stop({ signal: 'SIGKILL' });
    const [full] = metas(dir);
    expect(full!.path).not.toBe(before);
    expect(full!.chain ?? []).toEqual([]);
    const fromFull = path.join(dir, 'full.safetensors');
    expect(ckpt('export', '--out', fromFull, dir).status).toBe(0);
    expect(fs.readFileSync(fromFull).equals(fs.readFileSync(fromDeltas))).toBe(true);
    // The restore lost and changed nothing: the same digest, optimizer state and ages included.
    const digestOfFull = ckpt('digest', '--json', dir);
    expect(digestOfFull.status).toBe(0);
    expect(JSON.parse(digestOfFull.stdout)).toMatchObject({
      digest: (JSON.parse(digestOfChain.stdout) as { digest: string }).digest,
      rows: 200,
    });
  });

  it('verifies every file of each chain, and fails each checkpoint needing a corrupt delta', () => {
    const all = metas(dir);
    // The full one the restart wrote, then the chain of the first pserver: its two deltas on the
    // fill's full checkpoint, and the empty table's full checkpoint.
    expect(all.map((m) => m.chain?.length ?? 0)).toEqual([0, 2, 1, 0, 0]);
    const ok = ckpt('verify', dir);
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain(`OK      ${all[1]!.path}  ${all[1]!.size} bytes  `);
    expect(ok.stdout).toMatch(
      new RegExp(
        `OK {6}${all[1]!.path} .* delta, chain of 3 files \\(\\d+ bytes\\) .* rows in their buckets`,
      ),
    );
    expect(ok.stdout.match(/ {2}OK {6}/g)).toHaveLength(5);

    // One flipped byte in the first delta on the fill's full checkpoint: both checkpoints whose
    // chain holds it fail, naming it; the others stay intact.
    const delta = all[2]!;
    const file = path.join(dir, delta.path);
    const content = fs.readFileSync(file);
    content[Math.floor(content.length / 2)]! ^= 0x10;
    fs.writeFileSync(file, content);
    const broken = ckpt('verify', dir);
    expect(broken.status).toBe(1);
    expect(broken.stdout).toContain(
      `BROKEN  ${all[1]!.path}: chain file ${delta.path}: checkpoint ${file}`,
    );
    expect(broken.stdout).toContain(`BROKEN  ${delta.path}: checkpoint ${file}`);
    expect(broken.stdout.match(/ {2}BROKEN {2}/g)).toHaveLength(2);
    for (const intact of [all[0]!, all[3]!, all[4]!])
      expect(broken.stdout).toContain(`OK      ${intact.path}  `);

    const inspected = ckpt('inspect', path.join(dir, all[1]!.path));
    expect(inspected.status).toBe(1);
    expect(inspected.stdout).toContain(`BROKEN chain: ${delta.path}: checkpoint ${file}`);
  });
});
