import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bucketsOfIds } from '@pserver/proto';
import { readTableBucket } from './bucket-reader';
import { readCheckpointChain } from './chain';
import { chainOf, checkpointMeta, type CheckpointMeta } from './meta';
import type { ShardSnapshot, TableSnapshot } from './snapshot';
import { writeCheckpointFile } from './writer';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-bucket-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const buckets = 64;
const stride = 2;

/** A table part of the given ids, sorted by bucket and cut into sections of 100 rows. */
function table(rowIds: bigint[], salt: number, evicted?: bigint[]): TableSnapshot {
  const idBytes = new Uint8Array(BigInt64Array.from(rowIds).buffer);
  const of = bucketsOfIds(idBytes, buckets);
  const order = rowIds.map((_, k) => k).sort((a, b) => of[a]! - of[b]! || a - b);
  const sections: (TableSnapshot['sections'] extends Iterable<infer S> ? S : never)[] = [];
  for (let first = 0; first < order.length; first += 100) {
    const part = order.slice(first, first + 100);
    sections.push({
      ids: new Uint8Array(BigInt64Array.from(part, (k) => rowIds[k]!).buffer),
      values: new Uint8Array(Float32Array.from(part.flatMap((k) => [k, salt])).buffer),
      lastSeen: new Uint8Array(Uint32Array.from(part, () => salt).buffer),
      counts: new Uint8Array(Uint32Array.from(part, (k) => k).buffer),
      firstBucket: of[part[0]!]!,
      lastBucket: of[part[part.length - 1]!]!,
    });
  }
  return {
    spec: { name: 'emb', dim: 1, buckets, optimizer: { adagrad: {} } },
    step: salt,
    stride,
    pendingIds: new Uint8Array(),
    pendingCounts: new Uint8Array(),
    ...(evicted && { evictedIds: new Uint8Array(BigInt64Array.from(evicted).buffer) }),
    rows: rowIds.length,
    sections,
  };
}

async function commit(
  seq: number,
  part: TableSnapshot,
  parent?: CheckpointMeta,
): Promise<CheckpointMeta> {
  const uuid = `u${seq}`;
  const snapshot: ShardSnapshot = {
    index: 0,
    shardCount: 1,
    shardEpoch: 1,
    seq,
    uuid,
    ...(parent && { parentUuid: parent.uuid }),
    blockSize: 0,
    job: '',
    createdUnixNs: '1',
    updatesApplied: seq,
    tensors: [],
    tables: [part],
    marks: [],
  };
  const written = await writeCheckpointFile(snapshot, {
    root,
    path: `shard-0/e1-s${seq}-${uuid}.ckpt`,
  });
  return checkpointMeta(snapshot, written, parent ? chainOf(parent) : []);
}

const key = (ids: Uint8Array, k: number): string =>
  Buffer.from(ids.subarray(8 * k, 8 * k + 8)).toString('hex');

/** id → row bytes after applying parts in order: evictions, then rows. */
function apply(
  parts: { evicted: Uint8Array; ids: Uint8Array; values: Uint8Array }[],
): Map<string, string> {
  const rows = new Map<string, string>();
  for (const part of parts) {
    for (let k = 0; k < part.evicted.byteLength / 8; k++) rows.delete(key(part.evicted, k));
    for (let k = 0; k < part.ids.byteLength / 8; k++)
      rows.set(
        key(part.ids, k),
        Buffer.from(part.values.subarray(4 * stride * k, 4 * stride * (k + 1))).toString('hex'),
      );
  }
  return rows;
}

describe('reading one bucket', () => {
  const ids = Array.from({ length: 3000 }, (_, k) => BigInt(k * 7919) - 2n ** 40n);

  it('reads only the index and the sections of the bucket, and gives the chain end’s rows', async () => {
    const full = await commit(1, table(ids, 1));
    const delta = await commit(2, table(ids.slice(0, 300), 2, ids.slice(2900)), full);
    // Everything, through the full reader, then kept to bucket 5.
    const everything: { evicted: Uint8Array; ids: Uint8Array; values: Uint8Array }[] = [];
    await readCheckpointChain(root, delta, {
      tableEvictions: (e) =>
        everything.push({
          evicted: Uint8Array.from(e.ids),
          ids: new Uint8Array(),
          values: new Uint8Array(),
        }),
      tableRows: (r) =>
        everything.push({
          evicted: new Uint8Array(),
          ids: Uint8Array.from(r.ids),
          values: Uint8Array.from(r.values),
        }),
    });
    const inBucket = (id: string): boolean =>
      bucketsOfIds(Buffer.from(id, 'hex'), buckets)[0] === 5;
    const expected = new Map([...apply(everything)].filter(([id]) => inBucket(id)));
    expect(expected.size).toBeGreaterThan(10);

    const { parts, bytesRead } = await readTableBucket(root, delta, 'emb', 5);
    expect(parts.map((p) => p.file.uuid)).toEqual(['u1', 'u2']);
    const got = apply(
      parts.map((p) => ({ evicted: p.evictedIds, ids: p.rows.ids, values: p.rows.values })),
    );
    expect(got).toEqual(expected);
    // A bucket of 64 is a few sections of each file, not the files.
    expect(bytesRead * 4).toBeLessThan(full.size + delta.size);
  });

  it('detects a flipped byte in a section it reads', async () => {
    const full = await commit(1, table(ids, 1));
    const { parts } = await readTableBucket(root, full, 'emb', 9);
    const firstId = parts[0]!.rows.ids.subarray(0, 8);
    const file = path.join(root, full.path);
    const content = fs.readFileSync(file);
    const at = content.indexOf(Buffer.from(firstId));
    content[at]! ^= 0x01;
    fs.writeFileSync(file, content);
    await expect(readTableBucket(root, full, 'emb', 9)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringContaining('does not match its index entry'),
    });
  });

  it('the full reader refuses an index its meta places elsewhere', async () => {
    const full = await commit(1, table(ids, 1));
    const misplaced = {
      ...full,
      indexPlace: { ...full.indexPlace!, offset: full.indexPlace!.offset - 1 },
    };
    await expect(readCheckpointChain(root, misplaced, {})).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringContaining('its meta places it at byte'),
    });
  });
});
