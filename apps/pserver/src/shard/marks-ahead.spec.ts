import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkpointMeta, SnapshotBuffers, writeCheckpointFile } from '@pserver/checkpoint';
import { bucketsOfIds } from '@pserver/proto';
import { snapshotShard } from '../persistence/shard-snapshot';
import { restoreShard } from '../persistence/restore-shard';
import { replay } from '../replication/replay';
import type { PushRecord } from './push-record';
import { Shard } from './shard';
import { StagedPush } from './staged-push';
import { StoredTensor } from './stored-tensor';
import { checkTableSpec, createShardTable } from './table-spec';
import { StepMarks } from './step-marks';
import { MarksAhead } from './marks-ahead';

const f32 = 'ELEMENT_TYPE_FLOAT32';
const buckets = 8;

/** Two ids of distinct buckets of table `emb`, and their buckets. */
const [idA, idB] = [1n, 2n];
const bucketOf = (id: bigint): number =>
  bucketsOfIds(new Uint8Array(BigInt64Array.of(id).buffer), buckets)[0]!;

/** A shard of blocks `w@0`, `w@1` (2 ones each, SGD rate 1) and table `emb` (dim 1, rows 1). */
function shard(): Shard {
  const made = new Shard(0, 1, undefined);
  for (const name of ['w@0', 'w@1'])
    made.put(
      StoredTensor.create({
        name,
        elementType: f32,
        shape: [],
        content: new Uint8Array(new Float32Array([1, 1]).buffer),
        config: { learningRate: { base: 1 }, nonFinite: 'NON_FINITE_POLICY_REJECT' },
        memory: undefined,
      }),
    );
  made.putTable(
    createShardTable(
      checkTableSpec({
        name: 'emb',
        dim: 1,
        buckets,
        valueType: 'ELEMENT_TYPE_UNSPECIFIED',
        initializer: { constant: { value: 1 }, seed: 3, kind: 'constant' },
        optimizer: { sgd: {}, learningRate: { base: 1 }, algorithm: 'sgd' },
        admission: null,
        eviction: null,
        expectedRows: 0,
        pullMissing: 'PULL_MISSING_UNSPECIFIED',
      } as never),
      0,
      1,
    ),
  );
  made.markInitialized();
  return made;
}

/** A push of gradient 1 to both blocks and to rows idA and idB. */
function record(trainerId: number, step: number): PushRecord {
  const one = Buffer.from(new Float32Array([1, 1]).buffer);
  return {
    trainerId,
    step,
    grads: ['w@0', 'w@1'].map((name) => ({
      name,
      elementType: f32,
      offset: 0,
      content: one,
      shape: [],
    })),
    sparse: [
      {
        table: 'emb',
        ids: Buffer.from(BigInt64Array.of(idA, idB).buffer),
        grads: Buffer.from(new Float32Array([1, 1]).buffer),
        counts: Buffer.alloc(0),
      },
    ],
    evictions: [],
  };
}

const block = (s: Shard, name: string): number[] => [
  ...new Float32Array(Uint8Array.from(s.tensors.get(name)!.bytes()).buffer),
];
const row = (s: Shard, id: bigint): number =>
  new Float32Array(
    s.tables.get('emb')!.table.getRows(new Uint8Array(BigInt64Array.of(id).buffer)).values,
  )[0]!;

/**
 * The shard after a restore onto another count: trainer 7's step 4 is counted everywhere, its step
 * 5 only in the slices that came from a shard that applied it (`w@1` and idA's bucket).
 */
function restoredWithStepInFlight(): Shard {
  const s = shard();
  s.markStep(7, 4);
  s.ahead.add(
    {
      slices: ['w@1', `emb@${bucketOf(idA)}`],
      marks: [{ trainerId: 7, step: 5, updatedUnixMs: 1 }],
    },
    s.marks,
  );
  return s;
}

describe('marks some slices hold ahead of the shard', () => {
  beforeAll(() => expect(bucketOf(idA)).not.toBe(bucketOf(idB)));

  it('leave out of a re-run step the slices that counted it, and apply the rest once', () => {
    const s = restoredWithStepInFlight();
    replay(s, record(7, 5));
    expect(block(s, 'w@0')).toEqual([0, 0]);
    expect(block(s, 'w@1')).toEqual([1, 1]);
    expect(row(s, idA)).toBe(1);
    expect(row(s, idB)).toBe(0);
    // Step 5 is counted on the whole shard now: the group is gone, and step 6 applies everywhere.
    expect(s.marks.lastStep(7)).toBe(5);
    expect(s.ahead.empty).toBe(true);
    replay(s, record(7, 6));
    expect(block(s, 'w@1')).toEqual([0, 0]);
    expect(row(s, idA)).toBe(0);
  });

  it('leave nothing out for another trainer, or for a step past the mark ahead', () => {
    const s = restoredWithStepInFlight();
    replay(s, record(8, 1));
    expect(block(s, 'w@1')).toEqual([0, 0]);
    const t = restoredWithStepInFlight();
    replay(t, record(7, 6));
    expect(block(t, 'w@1')).toEqual([0, 0]);
    expect(row(t, idA)).toBe(0);
    expect(t.ahead.empty).toBe(true);
  });

  it('go through a checkpoint and back', async () => {
    const s = restoredWithStepInFlight();
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'marks-ahead-'));
    try {
      const snapshot = snapshotShard(
        s,
        { shardEpoch: 1, seq: 1, uuid: 'u' },
        new SnapshotBuffers(),
      );
      const written = await writeCheckpointFile(snapshot, { root, path: 'shard-0/a.ckpt' });
      const restored = new Shard(0, 1, undefined);
      await restoreShard(root, checkpointMeta(snapshot, written), restored);
      expect(restored.ahead.entries()).toEqual(s.ahead.entries());
      replay(restored, record(7, 5));
      expect(block(restored, 'w@1')).toEqual([1, 1]);
      expect(block(restored, 'w@0')).toEqual([0, 0]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('keep only marks above the shard’s, drop a trainer silent too long, and dissolve empty groups', () => {
    const base = new StepMarks();
    base.set(1, 9);
    base.set(2, 3);
    const ahead = new MarksAhead();
    ahead.add(
      {
        slices: ['a', 'b'],
        marks: [
          { trainerId: 1, step: 9, updatedUnixMs: 10 },
          { trainerId: 2, step: 4, updatedUnixMs: 10 },
        ],
      },
      base,
    );
    expect(ahead.has(1)).toBe(false);
    expect(ahead.counted(2, 4, 'a')).toBe(true);
    expect(ahead.counted(2, 5, 'a')).toBe(false);
    expect(ahead.counted(2, 4, 'c')).toBe(false);
    ahead.prune(5);
    expect(ahead.has(2)).toBe(true);
    ahead.prune(11);
    expect(ahead.empty).toBe(true);
    expect(ahead.entries()).toEqual([]);
  });

  it('a staged push leaves out a table’s rows by bucket and a gradient by name', () => {
    const s = shard();
    const push = new StagedPush(
      (name) => s.tensors.get(name),
      (name) => s.tables.get(name),
    );
    const r = record(1, 1);
    push.add('w@0', f32, 0, r.grads[0]!.content, [], true);
    push.add('w@1', f32, 0, r.grads[1]!.content, [], true);
    push.addSparse('emb', r.sparse[0]!.ids, r.sparse[0]!.grads, new Uint8Array(0));
    push.leaveOut((slice) => slice === 'w@0' || slice === `emb@${bucketOf(idB)}`);
    expect(push.complete().map(({ tensor }) => tensor.name)).toEqual(['w@1']);
    const [rows] = push.completeSparse();
    expect([...new BigInt64Array(Uint8Array.from(rows!.ids).buffer)]).toEqual([idA]);
    push.discard();
  });
});
