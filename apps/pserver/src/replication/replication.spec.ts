import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  checkpointMeta,
  writeCheckpointFile,
  type CheckpointMeta,
  type MetaStore,
} from '@pserver/checkpoint';
import { StandaloneTenure } from '@pserver/coordination';
import { silentLogger } from '@pserver/logging';
import type { ElementTypeName } from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import { SnapshotBuffers } from '@pserver/checkpoint';
import { AdmissionControl } from '../service/admission';
import { ParameterService } from '../service/parameter-service';
import { restoreShard } from '../service/restore-shard';
import { Shard } from '../service/shard';
import { applyForwarded, type ForwardedPush } from './forwarded-push';
import { shardDigest } from './shard-digest';

const epoch = 7;
const unusedStore: MetaStore = {
  checkpoints: [],
  everCommitted: false,
  commit: () => Promise.reject(new Error('not in this test')),
  forget: () => Promise.resolve(),
};
const call: CallContext = {
  signal: new AbortController().signal,
  deadline: Infinity,
  peer: 'test',
  logger: silentLogger,
};
const ctx = (trainerId: number, step: number) => ({ trainerId, pass: 0, step, shardEpoch: epoch });

/** Every optimizer, on float32 and float64 tensors (the element types that are optimized). */
const tensors: { name: string; type: ElementTypeName; optimizer: object }[] = [
  { name: 'sgd', type: 'ELEMENT_TYPE_FLOAT32', optimizer: { sgd: {} } },
  { name: 'momentum', type: 'ELEMENT_TYPE_FLOAT32', optimizer: { sgd: { momentum: 0.9 } } },
  { name: 'adam', type: 'ELEMENT_TYPE_FLOAT32', optimizer: { adam: {} } },
  { name: 'adamw', type: 'ELEMENT_TYPE_FLOAT32', optimizer: { adamw: { weightDecay: 0.01 } } },
  { name: 'adagrad', type: 'ELEMENT_TYPE_FLOAT32', optimizer: { adagrad: {} } },
  { name: 'adadelta', type: 'ELEMENT_TYPE_FLOAT32', optimizer: { adadelta: {} } },
  { name: 'rmsprop', type: 'ELEMENT_TYPE_FLOAT32', optimizer: { rmsprop: {} } },
  { name: 'adam64', type: 'ELEMENT_TYPE_FLOAT64', optimizer: { adam: {} } },
  { name: 'sgd64', type: 'ELEMENT_TYPE_FLOAT64', optimizer: { sgd: {} } },
];
const length = 64;

const tableSpec = (name: string, optimizer: object, eviction: object) =>
  ({
    name,
    dim: 4,
    buckets: 16,
    valueType: 'ELEMENT_TYPE_UNSPECIFIED',
    initializer: { uniform: { low: -0.1, high: 0.1 }, seed: 5, kind: 'uniform' },
    optimizer,
    admission: null,
    eviction,
    expectedRows: 0,
    pullMissing: 'PULL_MISSING_UNSPECIFIED',
  }) as never;

/** A deterministic stream of numbers in [0, 1). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function bytesOf(type: ElementTypeName, values: number[]): Buffer {
  const array =
    type === 'ELEMENT_TYPE_FLOAT64' ? new Float64Array(values) : new Float32Array(values);
  return Buffer.from(array.buffer);
}

/** A primary: a shard with every optimizer and two tables; its pushes recorded as forwarded. */
async function primary(): Promise<{
  shard: Shard;
  service: ParameterService;
  forwarded: ForwardedPush[];
}> {
  const shard = new Shard(0, 1, undefined);
  const tenure = new StandaloneTenure({ index: 0, shardCount: 1, epoch }, unusedStore);
  const forwarded: ForwardedPush[] = [];
  const service = new ParameterService({
    shard,
    tenure,
    admission: new AdmissionControl(1 << 30),
    checkpointer: {
      lastCommitted: undefined,
      save: () => Promise.resolve(undefined as unknown as CheckpointMeta),
    },
    replication: {
      replicate: (seq, push) => {
        expect(seq).toBe(shard.appliedSeq);
        forwarded.push(push);
        return Promise.resolve();
      },
      replicated: () => Promise.resolve(),
    },
  });
  for (const t of tensors)
    await service.initParam(
      {
        context: ctx(1, 0),
        param: {
          name: t.name,
          elementType: t.type,
          shape: [length],
          content: bytesOf(
            t.type,
            Array.from({ length }, (_, i) => i / length),
          ),
        },
        optimizer: { ...t.optimizer, learningRate: { base: 0.01 } } as never,
      },
      call,
    );
  await service.initTable(
    {
      context: ctx(1, 0),
      spec: tableSpec('rows', { sgd: {}, learningRate: { base: 0.1 } }, { maxRows: 300 }),
    },
    call,
  );
  await service.initTable(
    {
      context: ctx(1, 0),
      spec: tableSpec('rows2', { adagrad: {}, learningRate: { base: 0.1 } }, { ttlSteps: 40 }),
    },
    call,
  );
  shard.markInitialized();
  return { shard, service, forwarded };
}

/** `count` pushes of random gradients and rows by 3 trainers, half of them streamed in pieces. */
async function push(service: ParameterService, next: () => number, from: number, count: number) {
  for (let k = from; k < from + count; k++) {
    const trainerId = 1 + (k % 3);
    const step = 1 + Math.floor(k / 3);
    const chosen = tensors.filter(() => next() < 0.5);
    const grads = chosen.map((t) => ({
      name: t.name,
      elementType: t.type,
      shape: [length],
      content: bytesOf(
        t.type,
        Array.from({ length }, () => next() * 2 - 1),
      ),
    }));
    const ids = BigInt64Array.from({ length: 8 }, () => BigInt(Math.floor(next() * 500)));
    const rows = Float32Array.from({ length: 8 * 4 }, () => next() - 0.5);
    const sparse = [
      {
        table: next() < 0.5 ? 'rows' : 'rows2',
        ids: Buffer.from(ids.buffer),
        grads: Buffer.from(rows.buffer),
        counts: Buffer.alloc(0),
      },
    ];
    if (k % 2 === 0) {
      await service.sendGrads({ context: ctx(trainerId, step), grads, sparse }, call);
    } else {
      // Streamed: each gradient in two pieces, the rows in the last message.
      async function* chunks() {
        yield { context: ctx(trainerId, step), grads: [], sparse: [] };
        for (const g of grads) {
          const half = g.content.byteLength / 2;
          yield {
            context: null,
            grads: [{ ...g, offset: 0, content: g.content.subarray(0, half) }],
            sparse: [],
          };
          yield {
            context: null,
            grads: [{ ...g, offset: half, content: g.content.subarray(half), shape: [] }],
            sparse: [],
          };
        }
        yield { context: null, grads: [], sparse };
      }
      await service.sendGradsStream(chunks() as never, call);
    }
  }
}

describe('replication', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replication-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a replica loaded from the primary copy and fed its forwards holds the same bytes at each sequence number', async () => {
    const { shard, service, forwarded } = await primary();
    const next = random(11);
    await push(service, next, 0, 300);

    // The copy, as FetchSnapshot makes it, read back into a replica's shard.
    const snapshot = shard.snapshot(
      { shardEpoch: epoch, seq: 0, uuid: 'copy' },
      new SnapshotBuffers(1 << 20),
    );
    const written = await writeCheckpointFile(snapshot, { root: dir, path: 'copy.ckpt' });
    const replica = new Shard(0, 1, undefined);
    await restoreShard(dir, checkpointMeta(snapshot, written, []), replica);
    replica.appliedSeq = shard.appliedSeq;
    expect(shardDigest(replica)).toBe(shardDigest(shard));

    let applied = forwarded.length;
    for (let round = 0; round < 6; round++) {
      await push(service, next, 300 + round * 300, 300);
      for (; applied < forwarded.length; applied++) applyForwarded(replica, forwarded[applied]!);
      expect(replica.appliedSeq).toBe(shard.appliedSeq);
      expect(shardDigest(replica)).toBe(shardDigest(shard));
    }
    // Thousands of pushes, every one forwarded once, and rows evicted along the way by the
    // bound (sampled) and by age (swept), where the rows lie differently in the two.
    expect(shard.appliedSeq).toBe(2_100);
    expect(shard.tables.get('rows')!.table.totals.rowsEvicted).toBeGreaterThan(0);
    expect(shard.tables.get('rows2')!.table.totals.rowsEvicted).toBeGreaterThan(0);
  });

  it('changes with every push and every step mark, and with nothing else', async () => {
    const { shard, service } = await primary();
    const next = random(3);
    await push(service, next, 0, 50);
    const before = shardDigest(shard);
    // Reading changes nothing: a tensor's content() is a copy, a lookup creates no row.
    const copy = shard.tensors.get('sgd')!.content();
    copy[0] = copy[0]! ^ 1;
    shard.tables.get('rows')!.table.getRows(Buffer.from(BigInt64Array.of(999n).buffer));
    expect(shardDigest(shard)).toBe(before);
    await push(service, next, 50, 1);
    const pushed = shardDigest(shard);
    expect(pushed).not.toBe(before);
    shard.marks.set(9, 1);
    expect(shardDigest(shard)).not.toBe(pushed);
  });
});
