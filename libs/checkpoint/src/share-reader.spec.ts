import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bucketsOfIds } from '@pserver/proto';
import { readCheckpointChain } from './chain';
import { chainOf, type CheckpointMeta } from './meta';
import { readShardShare, type ShardShare } from './share-reader';
import {
  bytes,
  dense,
  embIds,
  embWanted,
  filter,
  rowText,
  ShardFiles,
  stripDensePlaces,
} from '../test-support/share-fixture';

let root: string;
let files: ShardFiles;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-share-'));
  files = new ShardFiles(root);
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** Checks a share against the reference, and that its rows are in bucket order. */
async function expectShareOf(meta: CheckpointMeta, share: ShardShare): Promise<void> {
  const want = await files.reference(meta, filter);
  expect(share.header).toEqual(want.header);
  expect(share.tensors).toEqual(want.tensors);
  expect(share.tensors.map((t) => t.tensor!.name)).toEqual(['w@1', 'bias']);
  expect({ marks: share.marks, closedSteps: share.closedSteps, ahead: share.ahead }).toEqual(
    want.marks,
  );
  expect(share.tables.map((t) => t.record)).toEqual([...want.records.values()]);
  for (const t of share.tables) {
    const name = t.record.spec!.name;
    const got = new Map<bigint, string>();
    const of = bucketsOfIds(t.rows.ids, t.record.spec!.buckets);
    for (let k = 0; k < of.length; k++) {
      got.set(Buffer.from(t.rows.ids).readBigInt64LE(8 * k), rowText(t.rows, k, t.stride, of[k]!));
      if (k > 0) expect(of[k]!).toBeGreaterThanOrEqual(of[k - 1]!);
    }
    expect(got).toEqual(want.rows.get(name));
    expect(got.size).toBeGreaterThan(0);
  }
}

describe("reading a shard's share", () => {
  it('through the index reads only the wanted frames and gives what a whole read kept to them gives', async () => {
    const { full, delta } = await files.chain();
    const share = await readShardShare(root, delta, filter);
    await expectShareOf(delta, share);
    // 2 or 3 of 80 buckets and 2 of 4 tensors: a few sections of each file, not the files.
    expect(share.bytesRead * 4).toBeLessThan(full.size + delta.size);
    // A delta's evicted and re-pushed id ends with the delta's row; an evicted one is gone.
    const emb = share.tables.find((t) => t.record.spec!.name === 'emb')!;
    expect(emb.record.step).toBe(102);
    const lastSeen = new Map<bigint, number>();
    for (let k = 0; k < emb.rows.ids.byteLength / 8; k++)
      lastSeen.set(
        Buffer.from(emb.rows.ids).readBigInt64LE(8 * k),
        Buffer.from(emb.rows.lastSeen).readUInt32LE(4 * k),
      );
    expect(lastSeen.get(embIds[0]!)).toBe(2);
    expect(lastSeen.has(embIds[1450]!)).toBe(false);
    expect([...lastSeen.values()]).toContain(1);
    expect(share.header).toMatchObject({ uuid: 'u2', shardIndex: 2, shardCount: 3 });
  });

  it('a full checkpoint alone is a chain of one', async () => {
    const { full } = await files.chain();
    await expectShareOf(full, await readShardShare(root, full, filter));
  });

  it('hands each tensor over as it is read, the same ones, whether through the index or whole', async () => {
    const { delta } = await files.chain();
    const kept = await readShardShare(root, delta, filter);
    // Through the index, then (the index rewritten as one written before it placed tensors) whole.
    for (const rewrite of [false, true]) {
      const meta = rewrite ? files.rewriteIndex(delta, stripDensePlaces) : delta;
      // Their bytes are only valid during the call: copied here.
      const handed: unknown[] = [];
      const share = await readShardShare(root, meta, filter, async (record) => {
        handed.push(
          structuredClone({
            ...record,
            tensor: { ...record.tensor!, content: Buffer.from(record.tensor!.content) },
          }),
        );
        await new Promise(setImmediate);
      });
      expect(share.tensors).toEqual([]);
      expect(handed).toEqual(kept.tensors.map((record) => structuredClone(record)));
      expect(handed.length).toBeGreaterThan(1);
    }
  });

  it('falls back to a whole read for an index that does not place tensors, with the same result', async () => {
    const { full, delta } = await files.chain();
    const indexed = await readShardShare(root, delta, filter);
    const older = files.rewriteIndex(delta, stripDensePlaces);
    // An index written before it placed tensors and marks is still a valid one.
    await expect(readCheckpointChain(root, older, {})).resolves.toMatchObject({ files: 2 });
    const share = await readShardShare(root, older, filter);
    expect({ ...share, bytesRead: 0 }).toEqual({ ...indexed, bytesRead: 0 });
    expect(share.bytesRead).toBe(full.size + older.size + older.indexPlace!.length);
  });

  it('reads through the indexes a chain whose full file was written before they placed tensors', async () => {
    const { full, delta } = await files.chain();
    // Only the last file's tensors and marks are read: the full file's index needs only tables
    // (its header is read as the file's first frame).
    const olderFull = files.rewriteIndex(full, stripDensePlaces);
    const mixed = { ...delta, chain: chainOf(olderFull) };
    const share = await readShardShare(root, mixed, filter);
    await expectShareOf(mixed, share);
    expect(share.bytesRead * 4).toBeLessThan(olderFull.size + delta.size);
  });

  it('falls back to a whole read of a dense-only chain (no index)', async () => {
    const full = await files.commit(1, { tensors: dense(1), tables: [] });
    const delta = await files.commit(2, { tensors: dense(3), tables: [] }, full);
    expect(delta.indexPlace).toBeUndefined();
    const share = await readShardShare(root, delta, filter);
    const want = await files.reference(delta, filter);
    expect(share.tensors).toEqual(want.tensors);
    expect(share.tensors.map((t) => t.tensor!.name)).toEqual(['w@1', 'bias']);
    expect(share.tensors[0]!.tensor!.content).toEqual(
      bytes(Float32Array.from({ length: 256 }, (_, k) => k * 3)),
    );
    expect({ marks: share.marks, closedSteps: share.closedSteps, ahead: share.ahead }).toEqual(
      want.marks,
    );
    expect(share.tables).toEqual([]);
    expect(share.bytesRead).toBe(full.size + delta.size);
  });

  it('does not read a corrupted row section it does not want, and refuses a corrupted one it wants', async () => {
    const { full, delta } = await files.chain();
    const before = await readShardShare(root, delta, filter);
    const emb = files.indexOf(full).tables.find((t) => t.table === 'emb')!;
    const holds = (s: (typeof emb.sections)[number], b: number) =>
      s.firstBucket <= b && b <= s.lastBucket;
    const unwanted = emb.sections.find((s) => !embWanted.some((b) => holds(s, b)))!;
    const wanted = emb.sections.find((s) => holds(s, embWanted[1]!))!;
    const middle = (s: typeof unwanted) =>
      Number(s.frame!.offset) + Math.floor(Number(s.frame!.length) / 2);
    files.flipByte(full, middle(unwanted));
    expect(await readShardShare(root, delta, filter)).toEqual(before);
    files.flipByte(full, middle(wanted));
    await expect(readShardShare(root, delta, filter)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      file: { uuid: 'u1' },
      message: expect.stringContaining(
        `checkpoint ${full.path}: the frame at byte ${Number(wanted.frame!.offset)}`,
      ),
    });
  });

  it('refuses a wanted tensor frame that does not match its place, naming the file', async () => {
    const { delta } = await files.chain();
    const w1 = files.indexOf(delta).tensors.find((t) => t.name === 'w@1')!;
    files.flipByte(delta, Number(w1.frame!.offset) + 20);
    await expect(readShardShare(root, delta, filter)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      file: { uuid: 'u2' },
    });
  });

  it('refuses a checkpoint of another shard than its meta says, either way', async () => {
    const { delta } = await files.chain();
    const other = { ...delta, index: 1 };
    await expect(readShardShare(root, other, filter)).rejects.toMatchObject({
      code: 'CHECKPOINT_INCOMPATIBLE',
      file: { uuid: 'u1' },
      message: expect.stringContaining('holds shard 2 of 3, its chain shard 1 of 3'),
    });
    const older = files.rewriteIndex(delta, stripDensePlaces);
    await expect(readShardShare(root, { ...older, index: 1 }, filter)).rejects.toMatchObject({
      code: 'CHECKPOINT_INCOMPATIBLE',
      file: { uuid: 'u1' },
    });
  });
});
