import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkpointPath, removeLeftoverTemporaries, removeUnreferenced } from './files';
import { ManifestStore } from './manifest-store';
import type { CheckpointMeta } from './meta';
import { metaFromJson, metaToJson } from './meta';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-test-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

function meta(seq: number, epoch = 1): CheckpointMeta {
  return {
    uuid: `u${seq}`,
    path: checkpointPath(0, epoch, seq, `u${seq}`),
    size: 100 + seq,
    checksumAlgorithm: 'CHECKSUM_ALGORITHM_CRC32C',
    checksum: 'deadbeef',
    timestampNs: '1764460800123456789',
    shardEpoch: epoch,
    index: 0,
    seq,
    updatesApplied: seq * 10,
    formatVersion: 1,
    chain: [],
  };
}

describe('ManifestStore', () => {
  it('raises the epoch on every open and keeps it durable', async () => {
    expect((await ManifestStore.open(root, 0, 2)).epoch).toBe(1);
    expect((await ManifestStore.open(root, 0, 2)).epoch).toBe(2);
    expect((await ManifestStore.open(root, 0, 2)).epoch).toBe(3);
    expect((await ManifestStore.open(root, 1, 2)).epoch).toBe(1);
    const manifest = JSON.parse(
      fs.readFileSync(path.join(root, 'shard-0', 'manifest.json'), 'utf8'),
    );
    expect(manifest).toMatchObject({
      formatVersion: 1,
      index: 0,
      shardCount: 2,
      epoch: 3,
      everCommitted: false,
    });
  });

  it('commits newest first, keeps the retained number, and remembers that it ever committed', async () => {
    const store = await ManifestStore.open(root, 0, 1);
    for (let seq = 1; seq <= 5; seq++) await store.commit(meta(seq), 3);
    expect(store.checkpoints.map((m) => m.seq)).toEqual([5, 4, 3]);
    await store.forget(store.checkpoints.map((m) => m.path));
    const reopened = await ManifestStore.open(root, 0, 1);
    expect(reopened.checkpoints).toEqual([]);
    expect(reopened.everCommitted).toBe(true);
  });

  it('refuses a manifest of another shard layout', async () => {
    await ManifestStore.open(root, 0, 2);
    await expect(ManifestStore.open(root, 0, 3)).rejects.toMatchObject({
      code: 'CHECKPOINT_INCOMPATIBLE',
      message: expect.stringContaining('belongs to shard 0 of 2, not 0 of 3'),
    });
  });

  it('refuses an unreadable manifest rather than starting over', async () => {
    await ManifestStore.open(root, 0, 1);
    fs.writeFileSync(path.join(root, 'shard-0', 'manifest.json'), '{ not json');
    await expect(ManifestStore.open(root, 0, 1)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
    });
  });

  it('stores metas as proto3 JSON that reads back the same', () => {
    const json = metaToJson(meta(7));
    expect(json).toMatchObject({
      size: '107',
      timestampNs: '1764460800123456789',
      checksum: '3q2+7w==',
      checksumAlgorithm: 'CHECKSUM_ALGORITHM_CRC32C',
    });
    expect(metaFromJson(JSON.parse(JSON.stringify(json)))).toEqual(meta(7));
  });
});

describe('checkpoint files on disk', () => {
  it('removes files no retained meta names, and only checkpoint files', async () => {
    const dir = path.join(root, 'shard-0');
    fs.mkdirSync(dir);
    for (const seq of [1, 2, 3]) fs.writeFileSync(path.join(root, meta(seq).path), 'x');
    fs.writeFileSync(path.join(dir, 'manifest.json'), '{}');
    fs.writeFileSync(path.join(dir, 'e1-s9-old.ckpt.broken'), 'x');
    const removed = await removeUnreferenced(root, 0, [meta(3), meta(2)]);
    expect(removed).toEqual([meta(1).path]);
    expect(fs.readdirSync(dir).sort()).toEqual([
      'e1-s2-u2.ckpt',
      'e1-s3-u3.ckpt',
      'e1-s9-old.ckpt.broken',
      'manifest.json',
    ]);
  });

  it('removes temporary files of lower epochs only', async () => {
    const dir = path.join(root, 'shard-0');
    fs.mkdirSync(dir);
    for (const name of [
      'e1-s1-a.ckpt.tmp',
      'e2-s4-b.ckpt.tmp',
      'e3-s1-c.ckpt.tmp',
      'e4-s1-d.ckpt.tmp',
    ])
      fs.writeFileSync(path.join(dir, name), 'x');
    expect(await removeLeftoverTemporaries(root, 0, 3)).toEqual([
      'shard-0/e1-s1-a.ckpt.tmp',
      'shard-0/e2-s4-b.ckpt.tmp',
    ]);
    expect(fs.readdirSync(dir).sort()).toEqual(['e3-s1-c.ckpt.tmp', 'e4-s1-d.ckpt.tmp']);
  });
});
