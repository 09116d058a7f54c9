import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChainFileError, readCheckpointChain, type ChainPosition } from './chain';
import { removeUnreferenced } from './files';
import { chainOf, checkpointMeta, type CheckpointMeta } from './meta';
import { readCheckpointFile } from './reader';
import type { ShardSnapshot, TableSnapshot } from './snapshot';
import { writeCheckpointFile } from './writer';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-chain-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const bytes = (array: ArrayBufferView): Buffer =>
  Buffer.from(array.buffer, array.byteOffset, array.byteLength);
const ids = (...values: bigint[]): Buffer => bytes(new BigInt64Array(values));

function table(rowIds: bigint[], evicted?: bigint[]): TableSnapshot {
  const n = rowIds.length;
  return {
    spec: { name: 'emb', dim: 1, buckets: 4, optimizer: { sgd: {} } },
    step: 10 + n,
    stride: 1,
    pendingIds: new Uint8Array(),
    pendingCounts: new Uint8Array(),
    ...(evicted && { evictedIds: ids(...evicted) }),
    rows: n,
    sections: [
      {
        ids: ids(...rowIds),
        values: bytes(Float32Array.from(rowIds, Number)),
        lastSeen: bytes(new Uint32Array(n).fill(1)),
        counts: bytes(new Uint32Array(n).fill(1)),
        firstBucket: 0,
        lastBucket: 3,
      },
    ],
  };
}

/** Writes a file of the chain `previous` ends with (a full one when it is empty); returns its meta. */
async function commit(
  seq: number,
  tableSnapshot: TableSnapshot,
  previous: CheckpointMeta | undefined,
): Promise<CheckpointMeta> {
  const uuid = `u${seq}`;
  const snapshot: ShardSnapshot = {
    index: 0,
    shardCount: 1,
    shardEpoch: 1,
    seq,
    uuid,
    ...(previous && { parentUuid: previous.uuid }),
    blockSize: 0,
    job: '',
    createdUnixNs: '1764460800123456789',
    updatesApplied: seq,
    tensors: [],
    tables: [tableSnapshot],
    marks: [{ trainerId: 1, step: seq, updatedUnixMs: 0 }],
  };
  const written = await writeCheckpointFile(snapshot, {
    root,
    path: `shard-0/e1-s${seq}-${uuid}.ckpt`,
  });
  return checkpointMeta(snapshot, written, previous ? chainOf(previous) : []);
}

/** Replays a chain the way a restorer does: evictions, then rows, into a map id → value. */
async function replay(meta: CheckpointMeta) {
  const rows = new Map<bigint, number>();
  const positions: ChainPosition[] = [];
  let marks: number[] = [];
  await readCheckpointChain(root, meta, {
    file: (position) => positions.push(position),
    tableEvictions: (e) => {
      for (const id of new BigInt64Array(Uint8Array.from(e.ids).buffer)) rows.delete(id);
    },
    tableRows: (r) => {
      const rowIds = new BigInt64Array(Uint8Array.from(r.ids).buffer);
      const values = new Float32Array(Uint8Array.from(r.values).buffer);
      rowIds.forEach((id, k) => rows.set(id, values[k]!));
    },
    stepMarks: (m) => (marks = m.map((mark) => mark.step)),
  });
  return { rows, positions, marks };
}

describe('delta chains', () => {
  it('replay the full checkpoint and each delta in order: evictions first, then rows', async () => {
    const base = await commit(1, table([1n, 2n, 3n]), undefined);
    const d1 = await commit(2, table([2n, 4n], [3n]), base);
    const d2 = await commit(3, table([3n], [1n, 4n]), d1);
    expect([base.formatVersion, d1.formatVersion, d2.formatVersion]).toEqual([2, 3, 3]);
    expect(d2.chain.map((f) => f.uuid)).toEqual(['u1', 'u2']);
    const { rows, positions, marks } = await replay(d2);
    // 1 evicted by d2, 3 evicted by d1 and pushed again in d2, 4 created by d1 and evicted by d2.
    expect([...rows.keys()].sort()).toEqual([2n, 3n]);
    expect(positions.map((p) => [p.file.uuid, p.index, p.last])).toEqual([
      ['u1', 0, false],
      ['u2', 1, false],
      ['u3', 2, true],
    ]);
    // Every file holds the step marks whole: the last one read is the shard's.
    expect(marks).toEqual([3]);
  });

  it('name the file at fault when a delta has a flipped byte', async () => {
    const base = await commit(1, table([1n, 2n]), undefined);
    const d1 = await commit(2, table([2n], [1n]), base);
    const d2 = await commit(3, table([5n]), d1);
    const file = path.join(root, d1.path);
    const content = fs.readFileSync(file);
    content[Math.floor(content.length / 2)]! ^= 0x01;
    fs.writeFileSync(file, content);
    const failure = await replay(d2).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ChainFileError);
    expect(failure).toMatchObject({ code: 'CHECKPOINT_CORRUPT', file: { uuid: 'u2' } });
    // The chain before it still reads.
    expect([...(await replay(base)).rows.keys()]).toEqual([1n, 2n]);
  });

  it('refuse a delta whose header names another parent than its chain', async () => {
    const base = await commit(1, table([1n]), undefined);
    const other = await commit(2, table([2n]), undefined);
    const d = await commit(3, table([3n]), base);
    const misplaced = {
      ...d,
      chain: [{ ...other, checksum: other.checksum }].map(({ uuid, path: p, size, checksum }) => ({
        uuid,
        path: p,
        size,
        checksum,
      })),
    };
    await expect(replay(misplaced)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringContaining('applies on "u1", its chain puts it on "u2"'),
      file: { uuid: 'u3' },
    });
  });

  it('a delta read alone says it is one: a full reader sees format 3 and its parent', async () => {
    const base = await commit(1, table([1n]), undefined);
    const d = await commit(2, table([2n], [1n]), base);
    const read = await readCheckpointFile(path.join(root, d.path));
    expect(read.header).toMatchObject({ formatVersion: 3, uuid: 'u2', parentUuid: 'u1' });
  });

  it('retention keeps every file a retained chain needs and deletes the rest', async () => {
    const base = await commit(1, table([1n]), undefined);
    const d1 = await commit(2, table([2n]), base);
    const d2 = await commit(3, table([3n]), d1);
    const newBase = await commit(4, table([4n]), undefined);
    const removed = await removeUnreferenced(root, 0, [newBase, d2]);
    expect(removed).toEqual([]);
    expect((await removeUnreferenced(root, 0, [newBase, d1])).sort()).toEqual([d2.path]);
    expect((await removeUnreferenced(root, 0, [newBase])).sort()).toEqual(
      [base.path, d1.path].sort(),
    );
  });
});
