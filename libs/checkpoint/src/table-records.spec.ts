import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TableRecord__Output, TableRows__Output } from '@pserver/proto';
import { encodeFrame } from './format';
import { readCheckpointFile, type CheckpointHeader } from './reader';
import type { ShardSnapshot, TableSnapshot } from './snapshot';
import { writeCheckpointFile } from './writer';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-tables-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const bytes = (array: ArrayBufferView): Buffer =>
  Buffer.from(array.buffer, array.byteOffset, array.byteLength);

type Section = TableSnapshot['sections'] extends Iterable<infer S> ? S : never;
const sections: Section[] = [
  {
    ids: bytes(new BigInt64Array([1n, -(2n ** 63n)])),
    values: bytes(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8])),
    lastSeen: bytes(new Uint32Array([40, 41])),
    counts: bytes(new Uint32Array([3, 1])),
    firstBucket: 2,
    lastBucket: 5,
  },
  {
    ids: bytes(new BigInt64Array([2n ** 63n - 1n])),
    values: bytes(new Float32Array([-1, -2, -3, -4])),
    lastSeen: bytes(new Uint32Array([7])),
    counts: bytes(new Uint32Array([2 ** 32 - 1])),
    firstBucket: 5,
    lastBucket: 11,
  },
];

const table: TableSnapshot = {
  spec: { name: 'emb', dim: 2, buckets: 16, optimizer: { adagrad: {} } },
  step: 41,
  stride: 4,
  pendingIds: bytes(new BigInt64Array([9n])),
  pendingCounts: bytes(new Uint32Array([2])),
  rows: 3,
  sections,
};

function snapshot(tables?: TableSnapshot[]): ShardSnapshot {
  return {
    index: 0,
    shardCount: 1,
    shardEpoch: 3,
    seq: 1,
    uuid: 'u1',
    blockSize: 0,
    job: '',
    createdUnixNs: '1764460800123456789',
    updatesApplied: 2,
    tensors: [],
    ...(tables && { tables }),
    marks: [],
  };
}

async function read(file: string) {
  let header: CheckpointHeader | undefined;
  const records: TableRecord__Output[] = [];
  const rows: TableRows__Output[] = [];
  await readCheckpointFile(path.join(root, file), {
    header: (h) => (header = h),
    table: (r) => records.push(r),
    tableRows: (r) => rows.push(r),
  });
  return { header: header!, records, rows };
}

describe('table records', () => {
  it('round-trip every column byte for byte, in format 2', async () => {
    const written = await writeCheckpointFile(snapshot([table]), { root, path: 'shard-0/t.ckpt' });
    expect(written.formatVersion).toBe(2);
    const { header, records, rows } = await read(written.path);
    expect(header.formatVersion).toBe(2);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ step: 41, rows: 3, spec: { name: 'emb', dim: 2 } });
    expect(records[0]!.pendingIds.equals(table.pendingIds)).toBe(true);
    expect(rows.map((r) => [r.table, r.stride])).toEqual([
      ['emb', 4],
      ['emb', 4],
    ]);
    sections.forEach((s, i) => {
      expect(rows[i]!.ids.equals(s.ids)).toBe(true);
      expect(rows[i]!.values.equals(s.values)).toBe(true);
      expect(rows[i]!.lastSeen.equals(s.lastSeen)).toBe(true);
      expect(rows[i]!.counts.equals(s.counts)).toBe(true);
    });
  });

  it('a shard without tables is still written in format 1, which older readers read', async () => {
    const written = await writeCheckpointFile(snapshot(), { root, path: 'shard-0/plain.ckpt' });
    expect(written.formatVersion).toBe(1);
    expect((await read(written.path)).header.formatVersion).toBe(1);
  });

  it('a file whose table lacks rows it announced is corrupt', async () => {
    const short = { ...table, rows: 2, sections: [sections[0]!] };
    const written = await writeCheckpointFile(snapshot([short]), { root, path: 'shard-0/s.ckpt' });
    // Rewrite the table record to announce one row more than follows (footer checksum aside,
    // the reader checks the row count first).
    const file = path.join(root, written.path);
    const original = fs.readFileSync(file);
    const honest = encodeFrame({
      table: {
        spec: table.spec,
        step: 41,
        rows: 2,
        pendingIds: table.pendingIds,
        pendingCounts: table.pendingCounts,
      },
    });
    const lying = encodeFrame({
      table: {
        spec: table.spec,
        step: 41,
        rows: 3,
        pendingIds: table.pendingIds,
        pendingCounts: table.pendingCounts,
      },
    });
    const at = original.indexOf(Buffer.from(honest));
    expect(at).toBeGreaterThan(0);
    fs.writeFileSync(
      file,
      Buffer.concat([original.subarray(0, at), lying, original.subarray(at + honest.byteLength)]),
    );
    await expect(read(written.path)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringContaining('1 of its rows are missing'),
    });
  });
});
