import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  checkpointMeta,
  writeCheckpointFile,
  type CheckpointMeta,
  type MetaStore,
} from '@pserver/checkpoint';
import { StandaloneTenure, type JobConsistency } from '@pserver/coordination';
import { silentLogger } from '@pserver/logging';
import type { ElementTypeName } from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import { SnapshotBuffers } from '@pserver/checkpoint';
import { AdmissionControl } from '../shard/admission';
import { FixedRoster, type Roster } from '../consistency/roster';
import { ParameterService } from '../service/parameter-service';
import { restoreShard } from '../persistence/restore-shard';
import { Shard } from '../shard/shard';
import type { PushRecord } from '../shard/push-record';
import { replay } from './replay';
import { shardDigest } from './shard-digest';
import { snapshotShard } from '../persistence/shard-snapshot';

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

/**
 * A primary: a shard with every optimizer and two tables; its pushes recorded as forwarded, each
 * forward answered by `answer` (at once by default).
 */
async function primary(
  steps: { consistency?: JobConsistency; roster?: Roster } = {},
  answer: () => Promise<void> = () => Promise.resolve(),
): Promise<{
  shard: Shard;
  service: ParameterService;
  forwarded: PushRecord[];
}> {
  const shard = new Shard(0, 1, undefined);
  const tenure = new StandaloneTenure({ index: 0, shardCount: 1, epoch }, unusedStore);
  const forwarded: PushRecord[] = [];
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
        return answer();
      },
      replicated: () => Promise.resolve(),
      // One replica that acknowledged every forward recorded so far.
      replicas: () => [{ member: 'ps-r', acked: forwarded.length, inSync: true }],
      // A receiver of a live move to 3 shards, halfway through its copy.
      receivers: () => [
        {
          member: 'ps-m',
          to: { index: 2, shardCount: 3 },
          copyBytes: 4096,
          sentBytes: 2048,
          loaded: false,
          acked: 1,
        },
      ],
    },
    ...steps,
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

/** A replica loaded from the primary's copy, as FetchSnapshot makes it. */
async function replicaOf(shard: Shard, dir: string): Promise<Shard> {
  const snapshot = snapshotShard(
    shard,
    { shardEpoch: epoch, seq: 0, uuid: 'copy' },
    new SnapshotBuffers(1 << 20),
  );
  const written = await writeCheckpointFile(snapshot, { root: dir, path: 'copy.ckpt' });
  const replica = new Shard(0, 1, undefined);
  await restoreShard(dir, checkpointMeta(snapshot, written, []), replica);
  replica.appliedSeq = shard.appliedSeq;
  return replica;
}

/**
 * Trainer t's SYNC contribution to step k: random gradients of some of the dense tensors, and
 * often random rows of a table (enough over the steps for `rows` to evict past its bound).
 */
function contribute(service: ParameterService, next: () => number, t: number, k: number) {
  const grads = tensors
    .filter(() => next() < 0.7)
    .map((tensor) => ({
      name: tensor.name,
      elementType: tensor.type,
      shape: [length],
      content: bytesOf(
        tensor.type,
        Array.from({ length }, () => next() - 0.5),
      ),
    }));
  const sparse =
    next() < 0.7
      ? [
          {
            table: next() < 0.5 ? 'rows' : 'rows2',
            ids: Buffer.from(
              BigInt64Array.from({ length: 100 }, () => BigInt(Math.floor(next() * 2000))).buffer,
            ),
            grads: Buffer.from(Float32Array.from({ length: 100 * 4 }, () => next() - 0.5).buffer),
            counts: Buffer.alloc(0),
          },
        ]
      : [];
  return service.sendGrads(
    {
      context: ctx(t, k),
      grads,
      sparse,
      sampleCount: grads.length + sparse.length > 0 ? 1 + t : 0,
    },
    call,
  );
}

describe('replication', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replication-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('SYNC: a replica fed the closed steps, and the marks reads moved, holds the same bytes', async () => {
    // "continue": a read then closes a step without its trainer (under "rerun" it asks for it).
    const { shard, service, forwarded } = await primary({
      consistency: { mode: 'sync', replicasToAggregate: 0, failover: 'continue' },
      roster: new FixedRoster(3),
    });
    const replica = await replicaOf(shard, dir);
    const next = random(5);
    let applied = forwarded.length;
    const check = (): void => {
      for (; applied < forwarded.length; applied++) replay(replica, forwarded[applied]!);
      expect(replica.appliedSeq).toBe(shard.appliedSeq);
      expect(replica.closedSteps).toBe(shard.closedSteps);
      expect(shardDigest(replica)).toBe(shardDigest(shard));
    };
    for (let k = 1; k <= 6; k++) {
      for (const t of [2, 3, 1]) await contribute(service, next, t, k);
      check();
    }
    // Trainer 3 reads step 8: it says it finished step 7, which closes without it.
    await contribute(service, next, 1, 7);
    await contribute(service, next, 2, 7);
    await service.getParams({ context: ctx(3, 8), names: ['sgd'] }, call);
    expect(forwarded.at(-1)!.marks).toEqual([
      { trainerId: 3, step: 7, updatedUnixMs: expect.any(Number) },
    ]);
    check();
    expect(shard.closedSteps).toBe(7);
    // GetShardStatus says how far the primary and its replicas are.
    expect(service.getShardStatus()).toMatchObject({
      appliedSeq: shard.appliedSeq,
      replicas: [{ member: 'ps-r', ackedSeq: forwarded.length, inSync: true }],
      moves: [
        {
          member: 'ps-m',
          index: 2,
          shardCount: 3,
          copyBytes: 4096,
          sentBytes: 2048,
          loaded: false,
          ackedSeq: 1,
        },
      ],
    });
    // The closed steps carried their tables' rows, and the evictions the replica replayed.
    const closed = forwarded.filter((f) => f.closedStep);
    expect(closed.some((f) => f.sparse.length > 0)).toBe(true);
    expect(closed.some((f) => f.evictions.length > 0)).toBe(true);
  });

  it('SSP: the marks reads moved go with the next forward', async () => {
    const { shard, service, forwarded } = await primary({
      consistency: { mode: 'ssp', staleness: 4 },
      roster: new FixedRoster(2),
    });
    const replica = await replicaOf(shard, dir);
    const next = random(9);
    // Trainer 2 reads step 3: it says it finished step 2 (a shard restored behind the job).
    await service.getParams({ context: ctx(2, 3), names: ['sgd'] }, call);
    await contribute(service, next, 1, 1);
    expect(forwarded.at(-1)!.marks).toEqual([
      { trainerId: 2, step: 2, updatedUnixMs: expect.any(Number) },
    ]);
    for (const push of forwarded) replay(replica, push);
    expect(shardDigest(replica)).toBe(shardDigest(shard));
  });

  it('SYNC: a read of the next step waits until the replicas hold the step', async () => {
    let answered: () => void = () => undefined;
    const { service, forwarded } = await primary(
      {
        consistency: { mode: 'sync', replicasToAggregate: 0, failover: 'rerun' },
        roster: new FixedRoster(2),
      },
      () => new Promise<void>((resolve) => (answered = resolve)),
    );
    const next = random(8);
    await contribute(service, next, 1, 1);
    await contribute(service, next, 2, 1);
    expect(forwarded.at(-1)!.closedStep).toEqual({ contributors: [1, 2] });
    let read = false;
    const reading = service
      .getParams({ context: ctx(1, 2), names: ['sgd'] }, call)
      .then(() => (read = true));
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(read).toBe(false);
    answered();
    await reading;
    expect(read).toBe(true);
  });

  it('a replica loaded from the primary copy and fed its forwards holds the same bytes at each sequence number', async () => {
    const { shard, service, forwarded } = await primary();
    const next = random(11);
    await push(service, next, 0, 300);

    const replica = await replicaOf(shard, dir);
    expect(shardDigest(replica)).toBe(shardDigest(shard));

    let applied = forwarded.length;
    for (let round = 0; round < 6; round++) {
      await push(service, next, 300 + round * 300, 300);
      for (; applied < forwarded.length; applied++) replay(replica, forwarded[applied]!);
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
