import {
  checkpointMeta,
  SnapshotBuffers,
  writeCheckpointFile,
  type CheckpointMeta,
} from '@pserver/checkpoint';
import { bucketsOfIds, shardOf } from '@pserver/proto';
import { replay } from '../src/replication/replay';
import type { PushRecord } from '../src/shard/push-record';
import { Shard } from '../src/shard/shard';
import { StoredTensor } from '../src/shard/stored-tensor';
import { checkTableSpec, createShardTable } from '../src/shard/table-spec';
import { snapshotShard } from '../src/persistence/shard-snapshot';

// Test fixtures: a small job's shards (8 blocks, a table of 48 rows in 16 buckets) at any count.

const f32 = 'ELEMENT_TYPE_FLOAT32';
const buckets = 16;
const blocks = Array.from({ length: 8 }, (_, k) => `w@${k}`);
const ids = Array.from({ length: 48 }, (_, k) => BigInt(k + 1));
export const trainer = 7;

const bucketOf = (id: bigint): number =>
  bucketsOfIds(new Uint8Array(BigInt64Array.of(id).buffer), buckets)[0]!;
const ownerOf = (id: bigint, count: number): number => shardOf(`emb@${bucketOf(id)}`, count);

/** Shard `index` of `count`: its blocks (each k+1, twice) and its part of table `emb`. */
export function oldShard(index: number, count: number): Shard {
  const shard = new Shard(index, count, undefined);
  blocks.forEach((name, k) => {
    if (shardOf(name, count) !== index) return;
    shard.put(
      StoredTensor.create({
        name,
        elementType: f32,
        shape: [],
        content: new Uint8Array(new Float32Array([k + 1, k + 1]).buffer),
        config: { learningRate: { base: 1 }, nonFinite: 'NON_FINITE_POLICY_REJECT' },
        memory: undefined,
      }),
    );
  });
  shard.putTable(
    createShardTable(
      checkTableSpec({
        name: 'emb',
        dim: 1,
        buckets,
        valueType: 'ELEMENT_TYPE_UNSPECIFIED',
        initializer: { constant: { value: 10 }, seed: 3, kind: 'constant' },
        optimizer: { sgd: {}, learningRate: { base: 1 }, algorithm: 'sgd' },
        admission: null,
        eviction: null,
        expectedRows: 0,
        pullMissing: 'PULL_MISSING_UNSPECIFIED',
      } as never),
      index,
      count,
    ),
  );
  shard.markInitialized();
  return shard;
}

/**
 * Trainer `trainerId`'s push of `step` to `shard`: gradient 1 on every block and row it holds
 * (the rows of `only` when given) — left out, as a primary answers a duplicate, where the shard
 * counted the step already. Returns the push applied, as a primary forwards it.
 */
export function pushTo(
  shard: Shard,
  step: number,
  trainerId = trainer,
  only?: readonly bigint[],
): PushRecord | undefined {
  if (shard.marks.lastStep(trainerId) >= step) return undefined;
  const record = { ...onesOn(shard, only ?? ids, false), trainerId, step };
  replay(shard, record);
  return record;
}

/**
 * SYNC: closes `step` on `shard` with `contributors`, the mean 1 on every block and row it holds
 * (each row counted once), as a primary applies a closed step. Returns the record it forwards.
 */
export function closeStepOn(shard: Shard, step: number, contributors: number[]): PushRecord {
  const record = { ...onesOn(shard, ids, true), trainerId: 0, step, closedStep: { contributors } };
  replay(shard, record);
  return record;
}

/** Gradient 1 on every block of `shard` and every row of `rows` it holds. */
function onesOn(shard: Shard, rows: readonly bigint[], counted: boolean): PushRecord {
  const mine = rows.filter((id) => ownerOf(id, shard.shardCount) === shard.index);
  return {
    trainerId: 0,
    step: 0,
    grads: [...shard.tensors.keys()].map((name) => ({
      name,
      elementType: f32,
      offset: 0,
      content: Buffer.from(new Float32Array([1, 1]).buffer),
      shape: [],
    })),
    sparse: [
      {
        table: 'emb',
        ids: Buffer.from(BigInt64Array.from(mine).buffer),
        grads: Buffer.from(new Float32Array(mine.length).fill(1).buffer),
        counts: counted
          ? Buffer.from(new Uint32Array(mine.length).fill(1).buffer)
          : Buffer.alloc(0),
      },
    ],
    evictions: [],
  };
}

/** The width and buckets of `shard`'s tables, as a sender slicing a push reads them. */
export const shapeOf =
  (shard: Shard) =>
  (table: string): { dim: number; buckets: number } => {
    const { dim, buckets } = shard.tables.get(table)!.table;
    return { dim, buckets };
  };

/** Every block's values and every row's value of `shards`, by name and id. */
export function stateOf(shards: readonly Shard[]): Map<string, number[]> {
  const state = new Map<string, number[]>();
  for (const shard of shards) {
    for (const [name, tensor] of shard.tensors)
      state.set(name, [...new Float32Array(Uint8Array.from(tensor.bytes()).buffer)]);
    const { table } = shard.tables.get('emb')!;
    const mine = ids.filter((id) => ownerOf(id, shard.shardCount) === shard.index);
    const rows = table.getRows(new Uint8Array(BigInt64Array.from(mine).buffer));
    mine.forEach((id, k) => state.set(`emb:${id}`, [rows.values[k]!]));
  }
  return state;
}

/** A checkpoint of `shard` written under `root` (`shard-<i>/<name>.ckpt`). */
export async function checkpointOf(
  root: string,
  shard: Shard,
  name = 'e1-s1',
): Promise<CheckpointMeta> {
  const snapshot = snapshotShard(
    shard,
    { shardEpoch: 1, seq: 1, uuid: `u${shard.index}-${name}` },
    new SnapshotBuffers(),
  );
  const written = await writeCheckpointFile(snapshot, {
    root,
    path: `shard-${shard.index}/${name}.ckpt`,
  });
  return checkpointMeta(snapshot, written);
}
