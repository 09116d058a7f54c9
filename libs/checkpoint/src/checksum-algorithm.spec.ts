import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChecksumAlgorithm } from '@pserver/proto';
import { checksumAlgorithm, decodeFrame, encodeFrame } from './format';
import { metaFromJson } from './meta';
import { readCheckpointFile } from './reader';
import type { ShardSnapshot } from './snapshot';
import { writeCheckpointFile, type WrittenFile } from './writer';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-checksum-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** The frames of a file, each with its varint length prefix. */
function frames(file: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < file.length;) {
    let length = 0;
    let prefix = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = file[at + prefix++]!;
      length += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
    }
    out.push(file.subarray(at, at + prefix + length));
    at += prefix + length;
  }
  return out;
}

const empty: ShardSnapshot = {
  index: 0,
  shardCount: 1,
  shardEpoch: 1,
  seq: 1,
  uuid: 'u',
  blockSize: 4,
  job: '',
  createdUnixNs: '1764460800123456789',
  updatesApplied: 0,
  tensors: [],
  marks: [{ trainerId: 7, step: 3, updatedUnixMs: 1764460800123 }],
};

const write = (): Promise<WrittenFile> =>
  writeCheckpointFile(empty, { root, path: 'shard-0/e1-s1-u.ckpt' });

describe('checksum algorithms', () => {
  it('declares in the contract exactly the algorithm the writer writes and the reader verifies', async () => {
    const declared = Object.values(ChecksumAlgorithm).filter(
      (a) => a !== 'CHECKSUM_ALGORITHM_UNSPECIFIED',
    );
    expect(declared).toEqual([checksumAlgorithm]);
    const written = await write();
    const file = fs.readFileSync(path.join(root, written.path));
    // A footer is a few bytes: its length prefix is one byte.
    const footer = decodeFrame(frames(file).at(-1)!.subarray(1)).footer!;
    expect(footer.checksumAlgorithm).toBe(checksumAlgorithm);
    await expect(
      readCheckpointFile(path.join(root, written.path), {}, written),
    ).resolves.toMatchObject({ checksum: written.checksum });
  });

  it('refuses a file checksummed with SHA-256, whose number the contract reserves', async () => {
    const written = await write();
    const file = path.join(root, written.path);
    const all = frames(fs.readFileSync(file));
    const body = Buffer.concat(all.slice(0, -1));
    const footer = decodeFrame(all.at(-1)!.subarray(1)).footer!;
    const sha256 = createHash('sha256').update(body).digest();
    // The number SHA-256 had: the generated types have no name for it now.
    const reserved = 2 as unknown as ChecksumAlgorithm;
    fs.writeFileSync(
      file,
      Buffer.concat([
        body,
        encodeFrame({ footer: { ...footer, checksumAlgorithm: reserved, checksum: sha256 } }),
      ]),
    );
    await expect(readCheckpointFile(file)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringContaining('checksum algorithm 2 is not one this reader knows'),
    });
  });

  it('refuses a meta that names another algorithm, saying which', () => {
    const meta = { uuid: 'u', path: 'shard-0/a.ckpt', size: '9', checksum: 'AAAAAA==' };
    expect(() => metaFromJson({ ...meta, checksumAlgorithm: 'CHECKSUM_ALGORITHM_SHA256' })).toThrow(
      'checksum algorithm CHECKSUM_ALGORITHM_SHA256 is not supported',
    );
    expect(() => metaFromJson({ ...meta, checksumAlgorithm: 2 })).toThrow(
      'checksum algorithm 2 is not supported',
    );
  });
});
