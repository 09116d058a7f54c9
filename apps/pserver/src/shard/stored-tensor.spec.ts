import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  readCheckpointFile,
  SnapshotBuffers,
  writeCheckpointFile,
  type ShardSnapshot,
  type TensorSnapshot,
} from '@pserver/checkpoint';
import type { TensorRecord__Output } from '@pserver/proto';
import { StoredTensor } from './stored-tensor';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'stored-tensor-test-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const f64 = (values: number[]): Buffer => Buffer.from(new Float64Array(values).buffer);
const valuesOf = (tensor: StoredTensor): number[] => [
  ...new Float64Array(Uint8Array.from(tensor.content()).buffer),
];

/** Writes `tensors` as a checkpoint file with the checkpoint library and reads the records back. */
async function throughCheckpoint(tensors: TensorSnapshot[]): Promise<TensorRecord__Output[]> {
  const snapshot: ShardSnapshot = {
    index: 0,
    shardCount: 1,
    shardEpoch: 1,
    seq: 1,
    uuid: 'u1',
    blockSize: 1024,
    job: 'job',
    createdUnixNs: '1',
    updatesApplied: 0,
    tensors,
    marks: [],
  };
  const written = await writeCheckpointFile(snapshot, { root, path: 'shard-0/e1-s1-u.ckpt' });
  const records: TensorRecord__Output[] = [];
  await readCheckpointFile(path.join(root, written.path), {
    tensor: (record) => records.push(record),
  });
  return records;
}

/** A record as the code before per-rule default rates wrote it: the config as InitParam gave it. */
function oldRecord(name: string, optimizer: TensorSnapshot['optimizer']): TensorSnapshot {
  return {
    tensor: { name, elementType: 'ELEMENT_TYPE_FLOAT64', shape: [], content: f64([0]) },
    optimizer,
    state: null,
  };
}

describe('StoredTensor learning rates across checkpoints', () => {
  it('restores a config written without a rate at the rate it had then, 1, and writes 1 from then on', async () => {
    const records = await throughCheckpoint([
      oldRecord('plain', null),
      oldRecord('empty', {}),
      oldRecord('sgd', { sgd: { momentum: 0 } }),
    ]);
    expect(records.map((r) => r.optimizer?.learningRate?.base)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    for (const record of records) {
      const tensor = StoredTensor.restore(record, undefined);
      const gradient = tensor.allocateGradient();
      gradient.values.fill(2);
      tensor.apply(gradient);
      gradient.release();
      expect(valuesOf(tensor)).toEqual([-2]);
      expect(tensor.config?.learningRate?.base).toBe(1);
      expect(tensor.snapshot(new SnapshotBuffers(1 << 16)).optimizer).toMatchObject({
        learningRate: { base: 1 },
      });
      tensor.release();
    }
  });

  it('keeps an Adam tensor written without a rate at 1, not the new default 1e-3', async () => {
    const [record] = await throughCheckpoint([oldRecord('adam', { adam: {} })]);
    const tensor = StoredTensor.restore(record!, undefined);
    const gradient = tensor.allocateGradient();
    gradient.values.fill(1);
    tensor.apply(gradient);
    gradient.release();
    // Adam's first step moves by about the rate: 1 here.
    expect(valuesOf(tensor)[0]).toBeCloseTo(-1, 6);
    tensor.release();
  });

  it('writes the default rate InitParam resolved, and restores it as written', async () => {
    const created = StoredTensor.create({
      name: 'adam',
      elementType: 'ELEMENT_TYPE_FLOAT64',
      shape: [],
      content: f64([0]),
      config: {
        adam: { weightDecay: 0 },
        learningRate: null,
        nonFinite: 'NON_FINITE_POLICY_REJECT',
      },
      memory: undefined,
    });
    expect(created.config?.learningRate?.base).toBe(1e-3);
    const [record] = await throughCheckpoint([created.snapshot(new SnapshotBuffers(1 << 16))]);
    created.release();
    expect(record!.optimizer?.learningRate?.base).toBe(1e-3);
    const restored = StoredTensor.restore(record!, undefined);
    const gradient = restored.allocateGradient();
    gradient.values.fill(1);
    restored.apply(gradient);
    gradient.release();
    expect(valuesOf(restored)[0]).toBeCloseTo(-1e-3, 9);
    restored.release();
  });
});
