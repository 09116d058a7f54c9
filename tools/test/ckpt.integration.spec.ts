import fs from 'node:fs';
import path from 'node:path';
import { placeTensor } from '@pserver/proto';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
} from '@pserver/testing';

import { ckpt, readSafetensors } from './ckpt-cli';

afterAll(stopAllProcesses);

describe('tools/ckpt', () => {
  const blockSize = 4;
  // Whole tensors as a trainer holds them; the pservers hold their blocks.
  const embedding = Float32Array.from({ length: 5 * 3 }, (_, i) => i * 0.5 - 3);
  const counts = new BigInt64Array([10n, -20n, 2n ** 62n]);
  let dir: string;

  beforeAll(async () => {
    dir = tempDir('ckpt-export');
    const shards = await Promise.all(
      [0, 1].map((i) =>
        startPserverProcess(['--index', String(i), '--shards', '2'], {
          checkpointDir: dir,
          name: `pserver-${i}`,
        }),
      ),
    );
    const drivers = shards.map((s) => new PserverDriver(s.address));
    const epochs = await Promise.all(drivers.map((d) => d.epoch()));
    const put = async (
      name: string,
      elementType: string,
      shape: number[],
      whole: ArrayBufferView,
      elementBytes: number,
    ) => {
      const elements = whole.byteLength / elementBytes;
      for (const block of placeTensor(name, elements, blockSize, 2)) {
        const content = Buffer.from(
          whole.buffer,
          whole.byteOffset + block.start * elementBytes,
          (block.end - block.start) * elementBytes,
        );
        await drivers[block.shard]!.initParam(
          { trainerId: 1, shardEpoch: epochs[block.shard] },
          { name: block.name, elementType: elementType as never, shape, content },
          elementType === 'ELEMENT_TYPE_FLOAT32'
            ? { sgd: {}, learningRate: { base: 1 } }
            : undefined,
        );
      }
    };
    await put('embedding', 'ELEMENT_TYPE_FLOAT32', [5, 3], embedding, 4);
    await put('counts', 'ELEMENT_TYPE_INT64', [3], counts, 8);
    // Both shards must hold blocks, or the test would not show reassembly across shards.
    expect(new Set(placeTensor('embedding', 15, blockSize, 2).map((b) => b.shard)).size).toBe(2);
    for (const [i, driver] of drivers.entries()) {
      await driver.finishInitParams({ trainerId: 1, shardEpoch: epochs[i] });
      driver.close();
    }
    // SIGTERM: each shard commits a final checkpoint.
    for (const shard of shards)
      expect(await shard.process.stop()).toEqual({ code: 0, signal: null });
  });

  it('exports a two-shard job as whole tensors that an independent reader reads back', () => {
    const out = path.join(dir, 'model.safetensors');
    const run = ckpt('export', '--out', out, dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const tensors = readSafetensors(out);
    expect([...tensors.keys()].sort()).toEqual(['counts', 'embedding']);
    expect(tensors.get('embedding')).toMatchObject({ dtype: 'F32', shape: [5, 3] });
    expect(Buffer.compare(tensors.get('embedding')!.data, bytesOf(embedding))).toBe(0);
    expect(tensors.get('counts')).toMatchObject({ dtype: 'I64', shape: [3] });
    expect(Buffer.compare(tensors.get('counts')!.data, bytesOf(counts))).toBe(0);
  });

  it('verifies every committed checkpoint, and names a broken one', () => {
    const ok = ckpt('verify', dir);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/shard 0 of 2 .*: 1 committed\n {2}OK {6}shard-0\/e1-s1-/);
    const manifest = JSON.parse(
      fs.readFileSync(path.join(dir, 'shard-1', 'manifest.json'), 'utf8'),
    );
    const file = path.join(dir, manifest.checkpoints[0].path);
    const original = fs.readFileSync(file);
    const damaged = Buffer.from(original);
    damaged[damaged.length - 3]! ^= 1;
    fs.writeFileSync(file, damaged);
    const broken = ckpt('verify', dir);
    expect(broken.status).toBe(1);
    expect(broken.stdout).toContain(`BROKEN  ${manifest.checkpoints[0].path}`);
    fs.writeFileSync(file, original);
  });

  it('inspects a file', () => {
    const manifest = JSON.parse(
      fs.readFileSync(path.join(dir, 'shard-0', 'manifest.json'), 'utf8'),
    );
    const run = ckpt('inspect', path.join(dir, manifest.checkpoints[0].path));
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/header: format 1, shard 0 of 2, epoch 1, seq 1/);
    expect(run.stdout).toMatch(/crc32c [0-9a-f]{8}: OK/);
  });
});
