import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bucketOfBigInt, shardOf, tableShardOf } from '@pserver/proto';
import { digestJobState, type ShardCheckpoint } from './job-digest';
import { checkpointMeta, chainOf, type CheckpointMeta } from './meta';
import type { ShardSnapshot, TableSnapshot, TensorSnapshot } from './snapshot';
import { writeCheckpointFile } from './writer';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'job-digest-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const bytes = (array: ArrayBufferView): Uint8Array =>
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

/** A job's state as a user sees it: dense records, and a table's rows by id with their ages. */
interface Row {
  /** Values and row-wise Adagrad's accumulator: stride 4. */
  values: number[];
  count: number;
  age: number;
}

interface Job {
  tensors: TensorSnapshot[];
  spec: TableSnapshot['spec'];
  rows: Map<bigint, Row>;
  pending: Map<bigint, number>;
}

const buckets = 16;
const spec: TableSnapshot['spec'] = {
  name: 'emb',
  dim: 3,
  valueType: 'ELEMENT_TYPE_FLOAT32',
  buckets,
  initializer: { uniform: { low: -0.1, high: 0.1 }, seed: 11 },
  optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.5 } },
  admission: { counting: { minCount: 2 } },
  eviction: { ttlSteps: 100 },
  pullMissing: 'PULL_MISSING_INIT',
};

function job(): Job {
  const rows: Job['rows'] = new Map();
  for (let k = 0; k < 40; k++) {
    const id = BigInt(k * 7919 - 150) * (k % 3 === 0 ? 2n ** 33n : 1n);
    rows.set(id, { values: [k / 8, -k, k * 0.25, k + 1], count: (k % 5) + 1, age: k % 9 });
  }
  const adam = (name: string, values: number[]): TensorSnapshot => ({
    tensor: {
      name,
      elementType: 'ELEMENT_TYPE_FLOAT32',
      shape: [10],
      content: bytes(Float32Array.from(values)),
    },
    optimizer: { adam: {}, learningRate: { base: 0.001 } },
    state: {
      updates: 7,
      slots: [
        { name: 'm', content: bytes(Float32Array.from(values, (v) => v / 10)) },
        { name: 'v', content: bytes(Float32Array.from(values, (v) => v * v)) },
      ],
      scalars: { beta1Power: 0.9 ** 7, beta2Power: 0.999 ** 7 },
    },
  });
  return {
    tensors: [
      adam('w@0', [1, 2, 3, 4]),
      adam('w@1', [5, 6, 7, 8]),
      adam('w@2', [9, 10]),
      {
        tensor: {
          name: 'steps',
          elementType: 'ELEMENT_TYPE_INT64',
          shape: [],
          content: bytes(BigInt64Array.from([42n])),
        },
        optimizer: null,
        state: null,
      },
    ],
    spec,
    rows,
    pending: new Map([
      [1000n, 1],
      [-1001n, 1],
      [2n ** 40n, 1],
    ]),
  };
}

interface Layout {
  /** Shards whose checkpoint is a full one and a delta on it. */
  deltas?: number[];
  /** The spec a shard writes. */
  specOf?: (index: number) => TableSnapshot['spec'];
  /** An id whose row every shard holds. */
  everywhere?: bigint;
}

const tableShard = (id: bigint, shards: number): number =>
  tableShardOf(spec.name, bucketOfBigInt(id, buckets), shards);

/**
 * Writes `state` as the checkpoints of a job of `shards` shards, placed as the pservers place
 * them, each shard's table at its own step (its rows' lastSeen are that step minus their ages);
 * the shards of `layout.deltas` as a full checkpoint of an older state and a delta bringing it
 * up to date (stale tensors, stale and evicted rows, other pending ids, an earlier step).
 */
async function write(state: Job, shards: number, layout: Layout = {}): Promise<ShardCheckpoint[]> {
  const dir = fs.mkdtempSync(path.join(root, `shards-${shards}-`));
  const out: ShardCheckpoint[] = [];
  for (let index = 0; index < shards; index++) {
    const step = 1000 + 37 * index + 5 * shards;
    const mine = (id: bigint): boolean =>
      tableShard(id, shards) === index || id === layout.everywhere;
    const rows = [...state.rows].filter(([id]) => mine(id));
    const pending = [...state.pending].filter(([id]) => mine(id));
    const tensors = state.tensors.filter((t) => shardOf(t.tensor.name, shards) === index);
    const specOf = layout.specOf ?? (() => state.spec);
    const file = (seq: number, parts: Partial<ShardSnapshot> & { tables: TableSnapshot[] }) =>
      commit(dir, { ...snapshotOf(index, shards, seq, tensors), ...parts });
    if (!layout.deltas?.includes(index)) {
      const table = tableOf(specOf(index), step, rows, pending);
      out.push({ root: dir, meta: await file(1, { tables: [table] }) });
      continue;
    }
    // Rows pushed in the last 5 steps are the delta's; before it, some had older values, and
    // the full checkpoint held an id the delta evicts and one it evicts and pushes again.
    const fullStep = step - 5;
    const recent = rows.filter(([, row]) => row.age < 5);
    const ghost = idOnShard(index, shards, 5000n);
    const stale = recent
      .filter((_, k) => k % 2 === 0)
      .map(([id, row]): [bigint, Row] => [
        id,
        { ...row, values: row.values.map((v) => v + 100), age: 1 },
      ]);
    const older: [bigint, Row][] = [
      ...rows
        .filter(([, row]) => row.age >= 5)
        .map(([id, row]): [bigint, Row] => [id, { ...row, age: row.age - 5 }]),
      ...stale,
      [ghost, { values: [9, 9, 9, 9], count: 1, age: 2 }],
    ];
    const full = await file(1, {
      tensors: tensors.map(staleTensor),
      tables: [
        tableOf(specOf(index), fullStep, older, [...pending, [idOnShard(index, shards, 9000n), 1]]),
      ],
    });
    const evicted = [ghost, ...(stale[0] ? [stale[0][0]] : [])];
    const delta = await file(2, {
      parentUuid: full.uuid,
      tables: [{ ...tableOf(specOf(index), step, recent, pending), evictedIds: ids(evicted) }],
    });
    out.push({ root: dir, meta: { ...delta, chain: chainOf(full) } });
  }
  return out;
}

function snapshotOf(
  index: number,
  shardCount: number,
  seq: number,
  tensors: TensorSnapshot[],
): ShardSnapshot {
  return {
    index,
    shardCount,
    shardEpoch: 3 + index,
    seq,
    uuid: `s${index}-${seq}`,
    blockSize: 4,
    job: '',
    createdUnixNs: '1764460800123456789',
    updatesApplied: 17 * index + seq,
    tensors,
    marks: [{ trainerId: 1, step: 9 + index, updatedUnixMs: 0 }],
  };
}

async function commit(dir: string, snapshot: ShardSnapshot): Promise<CheckpointMeta> {
  const written = await writeCheckpointFile(snapshot, {
    root: dir,
    path: `shard-${snapshot.index}/e1-s${snapshot.seq}-${snapshot.uuid}.ckpt`,
  });
  return checkpointMeta(snapshot, written);
}

/** A table's part as a shard writes it: rows in bucket order, in two sections. */
function tableOf(
  tableSpec: TableSnapshot['spec'],
  step: number,
  rows: readonly (readonly [bigint, Row])[],
  pending: readonly (readonly [bigint, number])[],
): TableSnapshot {
  const bucket = (id: bigint): number => bucketOfBigInt(id, buckets);
  const ordered = [...rows].sort(([a], [b]) => bucket(a) - bucket(b));
  const half = Math.ceil(ordered.length / 2);
  const sections = [ordered.slice(0, half), ordered.slice(half)]
    .filter((part) => part.length > 0)
    .map((part) => ({
      ids: ids(part.map(([id]) => id)),
      values: bytes(Float32Array.from(part.flatMap(([, row]) => row.values))),
      lastSeen: bytes(Uint32Array.from(part, ([, row]) => step - row.age)),
      counts: bytes(Uint32Array.from(part, ([, row]) => row.count)),
      firstBucket: bucket(part[0]![0]),
      lastBucket: bucket(part.at(-1)![0]),
    }));
  return {
    spec: tableSpec,
    step,
    stride: 4,
    pendingIds: ids(pending.map(([id]) => id)),
    pendingCounts: bytes(Uint32Array.from(pending, ([, count]) => count)),
    rows: ordered.length,
    sections,
  };
}

const ids = (values: readonly bigint[]): Uint8Array => bytes(BigInt64Array.from(values));

function idOnShard(index: number, shards: number, from: bigint): bigint {
  let id = from;
  while (tableShard(id, shards) !== index) id++;
  return id;
}

function staleTensor(t: TensorSnapshot): TensorSnapshot {
  return { ...t, tensor: { ...t.tensor, content: t.tensor.content.map((b) => b ^ 0xff) } };
}

/** `x` with the lowest bit of its float32 flipped: one byte of its encoding changed. */
function flipLowBit(x: number): number {
  const word = new Uint32Array(Float32Array.of(x).buffer);
  word[0]! ^= 1;
  return new Float32Array(word.buffer)[0]!;
}

describe('digestJobState', () => {
  it('gives the same digest for the same state at 1, 2 and 3 shards, deltas or not', async () => {
    const state = job();
    const two = await write(state, 2);
    const three = await write(state, 3, {
      deltas: [0, 2],
      // A writer that spelled out zero fields writes other bytes; the spec is the same.
      specOf: (index) =>
        index === 1 ? { ...spec, expectedRows: 0, admission: { counting: { minCount: 2 } } } : spec,
    });
    const one = await write(state, 1, { deltas: [0] });
    // The layouts differ: shards hold other rows, at other table steps.
    expect(three[0]!.meta.chain).toHaveLength(1);
    const digests = await Promise.all([two, three, one].map(digestJobState));
    expect(digests[0]).toMatchObject({
      digest: expect.stringMatching(/^[0-9a-f]{64}$/),
      shards: 2,
      tensors: 4,
      elements: 11,
      rows: 40,
      tables: [
        { name: 'emb', rows: 40, pending: 3, digest: expect.stringMatching(/^[0-9a-f]{64}$/) },
      ],
    });
    expect(digests[1]).toEqual({ ...digests[0], shards: 3 });
    expect(digests[2]).toEqual({ ...digests[0], shards: 1 });
  });

  type Change = (state: Job) => void;
  const row = (state: Job, k: number) => [...state.rows.values()][k]!;
  const changes: [string, Change][] = [
    ['one byte of a row value', (s) => (row(s, 3).values[1] = flipLowBit(row(s, 3).values[1]!))],
    [
      'one byte of a row optimizer slot',
      (s) => (row(s, 8).values[3] = flipLowBit(row(s, 8).values[3]!)),
    ],
    ['one row count', (s) => row(s, 5).count++],
    ['one row age', (s) => row(s, 12).age++],
    ['one pending count', (s) => s.pending.set(1000n, 2)],
    ['a row less', (s) => s.rows.delete([...s.rows.keys()][20]!)],
    [
      'one dense byte',
      (s) =>
        (s.tensors[1]!.tensor.content = s.tensors[1]!.tensor.content.map((b, k) =>
          k === 5 ? b ^ 1 : b,
        )),
    ],
    [
      'one dense optimizer slot byte',
      (s) =>
        (s.tensors[2]!.state!.slots[1]!.content = Uint8Array.of(
          ...s.tensors[2]!.state!.slots[1]!.content.map((b, k) => (k === 0 ? b ^ 0x80 : b)),
        )),
    ],
    ['the dense update count', (s) => (s.tensors[0]!.state!.updates = 8)],
    [
      'a dense optimizer config',
      (s) => (s.tensors[0]!.optimizer = { adam: { beta1: 0.8 }, learningRate: { base: 0.001 } }),
    ],
    ['the table spec', (s) => (s.spec = { ...spec, eviction: { ttlSteps: 101 } })],
  ];
  it.each(changes)('changes with %s', async (_, change) => {
    const state = job();
    const before = await digestJobState(await write(state, 2));
    change(state);
    // Written at another shard count, with deltas: only the change can tell them apart.
    const after = await digestJobState(await write(state, 3, { deltas: [0, 1, 2] }));
    expect(after.digest).not.toBe(before.digest);
  });

  it('refuses an id restored on two shards, a missing shard, and specs that differ', async () => {
    const state = job();
    const twice = await write(state, 2, { everywhere: [...state.rows.keys()][0]! });
    await expect(digestJobState(twice)).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringContaining('has rows on shards 0 and 1'),
    });
    const three = await write(state, 3);
    await expect(digestJobState(three.slice(0, 2))).rejects.toMatchObject({
      code: 'CHECKPOINT_INCOMPATIBLE',
      message: expect.stringContaining('holds shard 0 of 3, not 0 of 2'),
    });
    const differing = await write(state, 2, {
      specOf: (index) => ({ ...spec, eviction: { ttlSteps: 100 + index } }),
    });
    await expect(digestJobState(differing)).rejects.toMatchObject({
      code: 'CHECKPOINT_INCOMPATIBLE',
      message: 'table emb has another spec on shard 1 than on shard 0',
    });
  });

  it('is the SHA-256 of the canonical form the README describes', async () => {
    // A job of one shard: one float64 tensor with Adam's state, one table with one row and one
    // id pending admission. The expected digest is built here from the README alone.
    const m = bytes(Float64Array.of(0.5, -0.5));
    const v = bytes(Float64Array.of(0.25, 0.125));
    const content = bytes(Float64Array.of(3, 4));
    const snapshot: ShardSnapshot = {
      ...snapshotOf(0, 1, 1, []),
      tensors: [
        {
          tensor: { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT64', shape: [2], content },
          optimizer: {
            adam: { beta1: 0.9 },
            learningRate: { base: 0.001 },
            nonFinite: 'NON_FINITE_POLICY_REJECT',
          },
          state: {
            updates: 3,
            slots: [
              { name: 'v', content: v },
              { name: 'm', content: m },
            ],
            scalars: { beta2Power: 0.997, beta1Power: 0.729 },
          },
        },
      ],
      tables: [
        {
          spec: {
            name: 't',
            dim: 1,
            buckets: 1,
            optimizer: { sgd: {}, learningRate: { base: 0.5 } },
            expectedRows: 0,
            pullMissing: 'PULL_MISSING_INIT',
          },
          step: 10,
          stride: 1,
          pendingIds: ids([-2n]),
          pendingCounts: bytes(Uint32Array.of(1)),
          rows: 1,
          sections: [
            {
              ids: ids([7n]),
              values: bytes(Float32Array.of(1.5)),
              lastSeen: bytes(Uint32Array.of(4)),
              counts: bytes(Uint32Array.of(2)),
              firstBucket: 0,
              lastBucket: 0,
            },
          ],
        },
      ],
    };
    const dir = path.join(root, 'one');
    const meta = await commit(dir, snapshot);

    const u32 = (n: number) => bytes(Uint32Array.of(n));
    const u64 = (n: number) => bytes(BigUint64Array.of(BigInt(n)));
    const f64 = (x: number) => bytes(Float64Array.of(x));
    const str = (b: Uint8Array) => Buffer.concat([u64(b.byteLength), b]);
    const text = (t: string) => str(Buffer.from(t, 'utf8'));
    const sha = (...parts: Uint8Array[]) =>
      createHash('sha256').update(Buffer.concat(parts)).digest();
    const hex = (h: string) => Buffer.from(h.replace(/ /g, ''), 'hex');
    // Deterministic protobuf, zero fields left out: adam {beta1 0.9}, learning_rate {base 0.001}.
    const config = Buffer.concat([hex('12 09 09'), f64(0.9), hex('3a 09 09'), f64(0.001)]);
    // name "t", dim 1, buckets 1, optimizer {sgd {}, learning_rate {base 0.5}}, pull_missing INIT.
    const tableSpec = Buffer.concat([
      hex('0a 01 74 10 01 20 01 32 0d 0a 00 2a 09 09'),
      f64(0.5),
      hex('50 01'),
    ]);
    const tensor = sha(
      ...[text('b'), u32(6), u64(1), u64(2), str(content), u32(1), str(config), u32(1), u64(3)],
      ...[u64(2), text('m'), str(m), text('v'), str(v)],
      ...[u64(2), text('beta1Power'), f64(0.729), text('beta2Power'), f64(0.997)],
    );
    const table = sha(
      ...[
        text('t'),
        str(tableSpec),
        u64(1),
        ids([7n]),
        bytes(Float32Array.of(1.5)),
        u32(2),
        u64(6),
      ],
      ...[u64(1), ids([-2n]), u32(1)],
    );
    const expected = sha(text('pserver.job-digest.v1'), u64(1), tensor, u64(1), table);

    const digest = await digestJobState([{ root: dir, meta }]);
    expect(digest.tables).toEqual([
      { name: 't', digest: table.toString('hex'), rows: 1, pending: 1 },
    ]);
    expect(digest.digest).toBe(expected.toString('hex'));
  });

  it('refuses a row last seen after its table step', async () => {
    const state = job();
    row(state, 0).age = -1;
    await expect(digestJobState(await write(state, 2))).rejects.toMatchObject({
      code: 'CHECKPOINT_CORRUPT',
      message: expect.stringMatching(/was last seen at step \d+, after its table's step \d+$/),
    });
  });
});
