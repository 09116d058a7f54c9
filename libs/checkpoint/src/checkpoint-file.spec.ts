import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TensorRecord__Output } from '@pserver/proto';
import { CheckpointError } from './errors';
import { readCheckpointFile, type CheckpointHeader } from './reader';
import type { ShardSnapshot } from './snapshot';
import { writeCheckpointFile } from './writer';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-test-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const bytes = (array: ArrayBufferView): Buffer =>
  Buffer.from(array.buffer, array.byteOffset, array.byteLength);

function snapshot(): ShardSnapshot {
  return {
    index: 1,
    shardCount: 3,
    shardEpoch: 9,
    seq: 2,
    uuid: 'x',
    blockSize: 1024,
    job: 'job-a',
    createdUnixNs: '1764460800123456789',
    updatesApplied: 5,
    tensors: [
      {
        tensor: {
          name: 'w@0',
          elementType: 'ELEMENT_TYPE_FLOAT32',
          shape: [2, 1024],
          content: bytes(new Float32Array([1.5, -2, Math.PI])),
        },
        optimizer: { adam: { beta1: 0.8 }, learningRate: { base: 0.01, step: { stepSize: 3 } } },
        state: {
          updates: 4,
          slots: [{ name: 'm', content: bytes(new Float32Array([0.1, 0.2, 0.3])) }],
          scalars: { beta1Power: 0.4096 },
        },
      },
      {
        tensor: {
          name: 'ids',
          elementType: 'ELEMENT_TYPE_UINT64',
          shape: [2],
          content: bytes(new BigUint64Array([2n ** 64n - 1n, 3n])),
        },
        optimizer: null,
        state: null,
      },
    ],
    marks: [{ trainerId: 7, step: 12, updatedUnixMs: 1764460800123 }],
    closedSteps: 12,
  };
}

async function write(): Promise<{ file: string; size: number; checksum: string }> {
  const written = await writeCheckpointFile(snapshot(), { root, path: 'shard-1/e9-s2-x.ckpt' });
  return { file: path.join(root, written.path), size: written.size, checksum: written.checksum };
}

describe('checkpoint files', () => {
  it('round-trips a snapshot exactly, with a checksum its reader verifies', async () => {
    const written = await write();
    expect(fs.statSync(written.file).size).toBe(written.size);
    expect(fs.statSync(written.file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.join(root, 'shard-1'))).toEqual(['e9-s2-x.ckpt']);
    const tensors: TensorRecord__Output[] = [];
    let header: CheckpointHeader | undefined;
    let marks: unknown;
    let closedSteps: unknown;
    const result = await readCheckpointFile(
      written.file,
      {
        header: (h) => (header = h),
        tensor: (t) => tensors.push(t),
        stepMarks: (m, closed) => {
          marks = m;
          closedSteps = closed;
        },
      },
      written,
    );
    expect(result).toMatchObject({ records: 3, size: written.size, checksum: written.checksum });
    expect(header).toMatchObject({
      formatVersion: 1,
      shardIndex: 1,
      shardCount: 3,
      shardEpoch: 9,
      seq: 2,
      blockSize: 1024,
      job: 'job-a',
      createdUnixNs: '1764460800123456789',
    });
    expect(tensors.map((t) => t.tensor!.name)).toEqual(['w@0', 'ids']);
    const w = tensors[0]!;
    expect(w.tensor!.shape).toEqual([2, 1024]);
    expect(Buffer.compare(w.tensor!.content, bytes(new Float32Array([1.5, -2, Math.PI])))).toBe(0);
    expect(w.optimizer).toMatchObject({
      algorithm: 'adam',
      adam: { beta1: 0.8 },
      learningRate: { base: 0.01, step: { stepSize: 3 } },
    });
    expect(w.optimizer!.adam!.beta2).toBeUndefined();
    expect(w.state).toMatchObject({ updates: 4, scalars: { beta1Power: 0.4096 } });
    expect(
      Buffer.compare(w.state!.slots[0]!.content, bytes(new Float32Array([0.1, 0.2, 0.3]))),
    ).toBe(0);
    expect(
      Buffer.compare(tensors[1]!.tensor!.content, bytes(new BigUint64Array([2n ** 64n - 1n, 3n]))),
    ).toBe(0);
    expect(marks).toEqual([{ trainerId: 7, step: 12, updatedUnixMs: 1764460800123 }]);
    expect(closedSteps).toBe(12);
  });

  async function expectCorrupt(
    file: string,
    message: string | RegExp,
    expected?: { size: number; checksum: string },
  ): Promise<void> {
    const failure = readCheckpointFile(file, {}, expected);
    await expect(failure).rejects.toBeInstanceOf(CheckpointError);
    await expect(failure).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringMatching(message),
    });
  }

  it('detects one flipped bit in any byte, given its meta', async () => {
    const written = await write();
    const original = fs.readFileSync(written.file);
    for (let at = 0; at < written.size; at++) {
      const copy = Buffer.from(original);
      copy[at] = copy[at]! ^ 0x01;
      fs.writeFileSync(written.file, copy);
      await expect(readCheckpointFile(written.file, {}, written)).rejects.toMatchObject({
        code: 'CHECKPOINT_CORRUPT',
      });
    }
  });

  it('detects a flipped byte before the footer without its meta', async () => {
    const { file, size } = await write();
    const copy = fs.readFileSync(file);
    copy[Math.floor(size / 2)] = copy[Math.floor(size / 2)]! ^ 0x10;
    fs.writeFileSync(file, copy);
    await expect(readCheckpointFile(file)).rejects.toMatchObject({ code: 'CHECKPOINT_CORRUPT' });
  });

  it('detects truncation, trailing bytes, and a size or checksum other than its meta says', async () => {
    const written = await write();
    const original = fs.readFileSync(written.file);
    fs.writeFileSync(written.file, original.subarray(0, original.length - 7));
    await expectCorrupt(written.file, /truncated|past the end/);
    fs.writeFileSync(written.file, Buffer.concat([original, Buffer.from([0])]));
    await expectCorrupt(written.file, /after the footer|past the end/);
    fs.writeFileSync(written.file, original);
    await expectCorrupt(written.file, `${written.size} bytes, its meta says ${written.size + 1}`, {
      size: written.size + 1,
      checksum: written.checksum,
    });
    await expectCorrupt(written.file, 'its meta says 00000000', {
      size: written.size,
      checksum: '00000000',
    });
  });

  it('refuses a file that is not a checkpoint', async () => {
    const file = path.join(root, 'garbage.ckpt');
    fs.writeFileSync(
      file,
      Buffer.from('definitely not frames of a checkpoint, just text\n'.repeat(10)),
    );
    await expect(readCheckpointFile(file)).rejects.toMatchObject({ code: 'CHECKPOINT_CORRUPT' });
    fs.writeFileSync(file, Buffer.alloc(0));
    await expectCorrupt(file, 'without a footer');
  });

  it('leaves no temporary file when the write fails', async () => {
    const failing = writeCheckpointFile(snapshot(), {
      root,
      path: 'shard-1/e9-s3-y.ckpt',
      hook: (point) => {
        if (point === 'after-write-before-fsync')
          throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
      },
    });
    await expect(failing).rejects.toMatchObject({
      code: 'CHECKPOINT_IO',
      message: expect.stringContaining('EIO'),
    });
    expect(fs.readdirSync(path.join(root, 'shard-1'))).toEqual([]);
  });

  it('reports a full disk as CHECKPOINT_NO_SPACE', async () => {
    const failing = writeCheckpointFile(snapshot(), {
      root,
      path: 'shard-1/e9-s3-z.ckpt',
      hook: (point) => {
        if (point === 'mid-write')
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), {
            code: 'ENOSPC',
          });
      },
    });
    await expect(failing).rejects.toMatchObject({ code: 'CHECKPOINT_NO_SPACE' });
    expect(fs.readdirSync(path.join(root, 'shard-1'))).toEqual([]);
  });
});
