import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32c } from '@node-rs/crc32';
import type { CheckpointIndex__Output } from '@pserver/proto';
import type { CheckpointMeta } from './meta';
import { readCheckpointFile } from './reader';
import { ShardFiles } from '../test-support/share-fixture';

let root: string;
let files: ShardFiles;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-index-'));
  files = new ShardFiles(root);
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe('the index of tensors and step marks', () => {
  const read = (meta: CheckpointMeta) => readCheckpointFile(path.join(root, meta.path), {}, meta);

  it('places every tensor, in order, the step marks and the header', async () => {
    const { full } = await files.chain();
    const index = files.indexOf(full);
    expect(index.tensors.map((t) => t.name)).toEqual(['w@0', 'w@1', 'w@2', 'bias']);
    expect(Number(index.header!.offset)).toBe(0);
    expect(Number(index.stepMarks!.offset)).toBeGreaterThan(
      Number(index.tables[1]!.sections.at(-1)!.frame!.offset),
    );
    // Each place holds its frame's bytes, as its CRC-32C says; the file reads with the index checked.
    const content = fs.readFileSync(path.join(root, full.path));
    for (const place of [index.header!, ...index.tensors.map((t) => t.frame!), index.stepMarks!]) {
      const frame = content.subarray(
        Number(place.offset),
        Number(place.offset) + Number(place.length),
      );
      expect(crc32c(frame)).toBe(place.checksum.readUInt32BE());
    }
    await expect(read(full)).resolves.toMatchObject({ size: full.size, checksum: full.checksum });
  });

  it.each([
    [
      'a tensor out of place',
      (i: CheckpointIndex__Output) => ({
        ...i,
        tensors: i.tensors.map((t, k) =>
          k === 1 ? { ...t, frame: { ...t.frame!, offset: Number(t.frame!.offset) + 1 } } : t,
        ),
      }),
      'entry 2 (tensor w@1) says offset',
    ],
    [
      'tensors out of order',
      (i: CheckpointIndex__Output) => ({
        ...i,
        tensors: [i.tensors[1], i.tensors[0], ...i.tensors.slice(2)],
      }),
      'entry 1 (tensor w@1) says name w@1, the file has w@0',
    ],
    [
      'a tensor missing',
      (i: CheckpointIndex__Output) => ({ ...i, tensors: i.tensors.slice(1) }),
      'lists 5 header, tensor and marks frames (3 tensors), the file holds 6 (4 tensors)',
    ],
    [
      'the step marks elsewhere',
      (i: CheckpointIndex__Output) => ({ ...i, stepMarks: i.header }),
      'entry 5 (marks) says offset 0',
    ],
    [
      'tensors without the step marks',
      (i: CheckpointIndex__Output) => ({ ...i, stepMarks: null }),
      'places the header or tensors without the step marks',
    ],
  ])('refuses an index with %s', async (_, change, problem) => {
    const { full } = await files.chain();
    const wrong = files.rewriteIndex(full, change);
    await expect(read(wrong)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringContaining(problem),
    });
  });
});
