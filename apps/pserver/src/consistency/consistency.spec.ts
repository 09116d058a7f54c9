import type { CheckpointMeta, MetaStore } from '@pserver/checkpoint';
import { SnapshotBuffers } from '@pserver/checkpoint';
import { StandaloneTenure, type JobConsistency } from '@pserver/coordination';
import { silentLogger } from '@pserver/logging';
import type {
  OptimizerConfig__Output,
  SendGradsChunk__Output,
  SendGradsRequest__Output,
  TableSpec__Output,
} from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import { AdmissionControl } from '../shard/admission';
import { ParameterService } from '../service/parameter-service';
import { PserverError } from '../shard/errors';
import { Shard } from '../shard/shard';
import { standaloneConsistency } from './consistency';
import { FixedRoster, type Roster } from './roster';
import type { LostContributions } from './shard-consistency';
import { snapshotShard } from '../persistence/shard-snapshot';

const epoch = 3;
const unusedStore: MetaStore = {
  checkpoints: [],
  everCommitted: false,
  commit: () => Promise.reject(new Error('not used')),
  forget: () => Promise.resolve(),
};

function call(overrides: Partial<CallContext> = {}): CallContext {
  return {
    signal: new AbortController().signal,
    deadline: Infinity,
    peer: 'test',
    logger: silentLogger,
    ...overrides,
  };
}

const sgd = (rate: number): OptimizerConfig__Output =>
  ({
    learningRate: { base: rate },
    nonFinite: 'NON_FINITE_POLICY_REJECT',
  }) as OptimizerConfig__Output;

const f32 = (values: readonly number[]): Buffer => Buffer.from(new Float32Array(values).buffer);
const values = (given: unknown): number[] => {
  const bytes = given as Uint8Array;
  return [
    ...new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
  ];
};

interface Setup {
  consistency: JobConsistency;
  roster?: Roster;
}

/** A standalone job's mode over the roster 1..`trainers`. */
const standalone = (text: string, trainers: number, k = 0, failover = 'rerun'): Setup => ({
  consistency: standaloneConsistency(text, trainers, k, failover),
  roster: new FixedRoster(trainers),
});

/** A shard holding `w` (float32, 4 elements) under `setup`, initialized. */
async function shardUnder(
  setup: Setup,
  optimizer: OptimizerConfig__Output = sgd(1),
  initial: readonly number[] = [0, 0, 0, 0],
  onLostContributions?: (lost: LostContributions) => void,
  table?: TableSpec__Output,
) {
  const shard = new Shard(0, 1, undefined);
  const tenure = new StandaloneTenure({ index: 0, shardCount: 1, epoch }, unusedStore);
  const service = new ParameterService({
    shard,
    tenure,
    admission: new AdmissionControl(1 << 30),
    checkpointer: {
      lastCommitted: undefined,
      save: () => Promise.resolve({} as CheckpointMeta),
    },
    ...setup,
    onLostContributions,
  });
  await service.initParam(
    {
      context: { trainerId: 0, pass: 0, step: 0, shardEpoch: epoch },
      param: { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', shape: [], content: f32(initial) },
      optimizer,
    },
    call(),
  );
  if (table)
    await service.initTable(
      { context: { trainerId: 0, pass: 0, step: 0, shardEpoch: epoch }, spec: table },
      call(),
    );
  shard.markInitialized();
  const push = (
    trainerId: number,
    step: number,
    grads: readonly number[] | undefined,
    sampleCount?: number,
  ) =>
    service.sendGrads(
      {
        context: { trainerId, pass: 0, step, shardEpoch: epoch },
        grads: grads
          ? [{ name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', shape: [], content: f32(grads) }]
          : [],
        sparse: [],
        ...(sampleCount !== undefined && { sampleCount }),
      } as SendGradsRequest__Output,
      call(),
    );
  const read = (trainerId: number, step: number, ctx: CallContext = call()) =>
    service.getParams(
      { context: { trainerId, pass: 0, step, shardEpoch: epoch }, names: ['w'] },
      ctx,
    );
  const w = async () => values((await read(0, 0)).params?.[0]?.content);
  return { shard, service, push, read, w };
}

/** Whether `promise` settled within a few turns of the event loop. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('standaloneConsistency', () => {
  it('reads async, sync and ssp:<s>', () => {
    expect(standaloneConsistency('async', 0)).toEqual({ mode: 'async' });
    expect(standaloneConsistency('sync', 3, 2)).toEqual({
      mode: 'sync',
      replicasToAggregate: 2,
      failover: 'rerun',
    });
    expect(standaloneConsistency('sync', 3, 0, 'continue')).toMatchObject({ failover: 'continue' });
    expect(standaloneConsistency('ssp:4', 2)).toEqual({ mode: 'ssp', staleness: 4 });
  });

  it('refuses what it cannot read, naming the flag and the value', () => {
    expect(() => standaloneConsistency('bsp', 2)).toThrow(
      "--consistency: expected async, sync or ssp:<staleness>, got 'bsp'",
    );
    expect(() => standaloneConsistency('sync', 0)).toThrow('needs --sync-trainers');
    expect(() => standaloneConsistency('sync', 2, 3)).toThrow(
      '--replicas-to-aggregate 3 is above --sync-trainers 2',
    );
    expect(() => standaloneConsistency('sync', 2, 0, 'skip')).toThrow(
      "--sync-failover: expected rerun or continue, got 'skip'",
    );
  });
});

describe('SYNC', () => {
  const sync = (trainers: number, k = 0, failover = 'rerun') =>
    standalone('sync', trainers, k, failover);

  it('accumulates a step and applies the mean of its contributions once all arrived', async () => {
    const { push, w, service } = await shardUnder(sync(3));
    expect(await push(2, 1, [3, 0, 0, 0])).toMatchObject({
      outcome: 'PUSH_OUTCOME_ACCUMULATED',
      lastAppliedStep: 1,
      version: 0,
    });
    expect(await push(1, 1, [0, 6, 0, 0])).toMatchObject({ version: 0 });
    expect(await w()).toEqual([0, 0, 0, 0]);
    expect(await push(3, 1, [0, 0, 9, 3])).toMatchObject({
      outcome: 'PUSH_OUTCOME_ACCUMULATED',
      version: 1,
    });
    expect(await w()).toEqual([-1, -2, -3, -1]);
    expect(service.getShardStatus()).toMatchObject({
      consistency: { mode: 'CONSISTENCY_MODE_SYNC' },
      version: 1,
      minClock: 1,
      roster: [1, 2, 3],
    });
  });

  it('holds its steps for a live change of the count: none after the highest joined closes until the shards agree, then those through the agreed one', async () => {
    const { push, service, shard } = await shardUnder(sync(2));
    await push(1, 1, [2, 0, 0, 0]);
    // Step 1 has a contribution: it is the highest joined, and may still close.
    expect(service.consistency.holdSteps()).toBe(1);
    await push(2, 1, [4, 0, 0, 0]);
    expect(shard.closedSteps).toBe(1);
    // Step 2 gets every contribution but stays open: it is after the hold.
    await push(1, 2, [2, 0, 0, 0]);
    await push(2, 2, [2, 0, 0, 0]);
    expect(shard.closedSteps).toBe(1);
    // The shards agreed on step 2: it closes; step 3 stays open, its contributions acknowledged.
    await service.consistency.closeThrough(2);
    expect(shard.closedSteps).toBe(2);
    for (const trainer of [1, 2])
      expect(await push(trainer, 3, [1, 0, 0, 0])).toMatchObject({
        outcome: 'PUSH_OUTCOME_ACCUMULATED',
      });
    expect(shard.closedSteps).toBe(2);
    // Agreeing on a step already closed resolves at once.
    await service.consistency.closeThrough(1);
    service.beginShutdown();
  });

  it('sums in ascending trainer order whatever order the contributions arrive in', async () => {
    // Float32 sums of these differ by order: a + b + c ≠ c + a + b in the last bits.
    const grads = [
      [1e8, 0.1, 3.3, -7.7],
      [1, 1e-3, -1e7, 2.5],
      [-1e8, 0.7, 1e7, 1e-6],
    ];
    const results: number[][] = [];
    for (const order of [
      [0, 1, 2],
      [2, 0, 1],
      [1, 2, 0],
    ]) {
      const { push, w } = await shardUnder(sync(3));
      for (const i of order) await push(i + 1, 1, grads[i]!);
      results.push(await w());
    }
    // The reference: ((g1 + g2) + g3) / 3 in float32, then w = 0 − 1·mean.
    const r = Math.fround;
    const expected = [0, 1, 2, 3].map((j) => {
      const sum = r(r(r(grads[0]![j]!) + r(grads[1]![j]!)) + r(grads[2]![j]!));
      return r(0 - r(r(sum / 3)));
    });
    for (const result of results) expect(result).toEqual(expected);
  });

  it('weighs contributions by sample count; a zero-sample push only lets the step close', async () => {
    const { push, w } = await shardUnder(sync(3));
    await push(1, 1, [4, 4, 4, 4], 1);
    await push(2, 1, [8, 8, 8, 8], 3);
    expect(await push(3, 1, undefined, 0)).toMatchObject({ version: 1 });
    expect(await w()).toEqual([-7, -7, -7, -7]); // (4 + 3·8) / 4
  });

  it('applies nothing for a step where nobody had data: the optimizer does not advance', async () => {
    const { push, shard } = await shardUnder(sync(2));
    await push(1, 1, undefined, 0);
    expect(await push(2, 1, undefined, 0)).toMatchObject({ version: 1 });
    expect(shard.tensors.get('w')!.updates).toBe(0);
  });

  it('answers a retried contribution as a duplicate, before and after the close', async () => {
    const { push, w } = await shardUnder(sync(2));
    await push(1, 1, [2, 2, 2, 2]);
    expect(await push(1, 1, [100, 100, 100, 100])).toMatchObject({
      outcome: 'PUSH_OUTCOME_DUPLICATE',
      lastAppliedStep: 1,
    });
    await push(2, 1, [4, 4, 4, 4]);
    expect(await push(2, 1, [4, 4, 4, 4])).toMatchObject({ outcome: 'PUSH_OUTCOME_DUPLICATE' });
    expect(await w()).toEqual([-3, -3, -3, -3]);
  });

  it('parks a push for a later step until the steps before it close; refuses one from outside the roster', async () => {
    const { push, w, service } = await shardUnder(sync(2));
    await expect(push(7, 1, [1, 1, 1, 1])).rejects.toMatchObject({
      code: 'PSERVER_NOT_IN_ROSTER',
      message: expect.stringContaining('trainer 7 is not in the roster'),
    });
    expect(await w()).toEqual([0, 0, 0, 0]);

    // Trainer 1 saw step 1 close elsewhere; here trainer 2's contribution is still on its way.
    await push(1, 1, [2, 2, 2, 2]);
    const early = push(1, 2, [4, 4, 4, 4]);
    expect(await settled(early)).toBe(false);
    expect(service.consistency.parked.size).toBe(1);
    await push(2, 1, [2, 2, 2, 2]);
    expect(await early).toMatchObject({ outcome: 'PUSH_OUTCOME_ACCUMULATED', version: 1 });
    await push(2, 2, [4, 4, 4, 4]);
    expect(await w()).toEqual([-6, -6, -6, -6]);
  });

  it('rerun: a shard restored behind the job asks for each trainer’s last step again', async () => {
    const lost: LostContributions[] = [];
    // As a shard restored from a checkpoint of step 0 finds the job: trainer 2 finished step 4
    // and pushes step 5; trainer 1 finished step 5 and reads step 6. Each client holds the pushes
    // of its last finished step only.
    const { push, read, w, service } = await shardUnder(sync(2), sgd(1), [0, 0, 0, 0], (l) =>
      lost.push(l),
    );
    await expect(push(2, 5, [2, 2, 2, 2])).rejects.toMatchObject({
      code: 'PSERVER_RESEND_STEP',
      message: expect.stringContaining('no contribution of trainer 2 to step 4'),
    });
    const resent = push(2, 4, [1, 1, 1, 1]);
    expect(await settled(resent)).toBe(false); // trainer 1 may still contribute to steps 1..3
    await expect(read(1, 6)).rejects.toMatchObject({
      code: 'PSERVER_RESEND_STEP',
      message:
        'GetParams for step 6: this shard holds no contribution of trainer 1 to step 5, which is open here (it was lost with a failover): send the push of step 5 again, then retry',
    });
    // Steps 1..3, which no client holds any more, closed without their contributions, and step 4
    // without trainer 1's; step 5 closes with both, exactly.
    expect(await resent).toMatchObject({ outcome: 'PUSH_OUTCOME_ACCUMULATED', version: 4 });
    expect(lost).toEqual([
      { step: 1, trainers: [1, 2] },
      { step: 2, trainers: [1, 2] },
      { step: 3, trainers: [1, 2] },
      { step: 4, trainers: [1] },
    ]);
    expect(await w()).toEqual([-1, -1, -1, -1]);
    expect(await push(2, 5, [2, 2, 2, 2])).toMatchObject({ version: 4 });
    expect(await push(1, 5, [4, 4, 4, 4])).toMatchObject({
      outcome: 'PUSH_OUTCOME_ACCUMULATED',
      version: 5,
    });
    expect(await read(1, 6)).toMatchObject({ version: 5 });
    expect(await w()).toEqual([-4, -4, -4, -4]);
    // Sent again once more (its reply was lost), the push is a duplicate.
    expect(await push(1, 5, [4, 4, 4, 4])).toMatchObject({ outcome: 'PUSH_OUTCOME_DUPLICATE' });
    expect(lost).toHaveLength(4);
    expect(service.consistency.lastStep(1)).toBe(5);
  });

  it('rerun: a trainer asked for a step it took no part in answers with a zero-sample push', async () => {
    const { push, read, w } = await shardUnder(sync(2));
    await push(2, 1, [2, 2, 2, 2]);
    await expect(read(1, 2)).rejects.toMatchObject({ code: 'PSERVER_RESEND_STEP' });
    expect(await push(1, 1, undefined, 0)).toMatchObject({ outcome: 'PUSH_OUTCOME_ACCUMULATED' });
    expect(await read(1, 2)).toMatchObject({ version: 1 });
    expect(await w()).toEqual([-2, -2, -2, -2]);
  });

  it('continue: a shard restored behind the job closes the steps its trainers finished, without what it lost', async () => {
    const lost: LostContributions[] = [];
    // As a shard restored from a checkpoint of step 0 finds the job: trainer 2 pushes step 5,
    // trainer 1 contributed to step 5 before the crash and reads step 6.
    const { push, read, w, service } = await shardUnder(
      sync(2, 0, 'continue'),
      sgd(1),
      [0, 0, 0, 0],
      (l) => lost.push(l),
    );
    const pushed = push(2, 5, [2, 2, 2, 2]);
    expect(await settled(pushed)).toBe(false); // trainer 1 may still contribute to steps 1..4
    const reading = read(1, 6);
    expect(await pushed).toMatchObject({ outcome: 'PUSH_OUTCOME_ACCUMULATED', version: 5 });
    expect(await reading).toMatchObject({ version: 5 });
    expect(lost).toEqual([
      { step: 1, trainers: [1, 2] },
      { step: 2, trainers: [1, 2] },
      { step: 3, trainers: [1, 2] },
      { step: 4, trainers: [1, 2] },
      { step: 5, trainers: [1] },
    ]);
    // Only what trainer 2 sent after the restart was applied, once; steps without any applied
    // nothing (the optimizer did not advance).
    expect(await w()).toEqual([-2, -2, -2, -2]);
    expect(service.consistency.lastStep(1)).toBe(5);
    // From here on steps close as usual.
    await push(1, 6, [2, 2, 2, 2]);
    await push(2, 6, [4, 4, 4, 4]);
    expect(await w()).toEqual([-5, -5, -5, -5]);
    expect(lost).toHaveLength(5);
  });

  it('with backups (K of N) closes at K and answers later pushes for that step dropped late', async () => {
    const { push, w } = await shardUnder(sync(3, 2));
    await push(3, 1, [2, 2, 2, 2]);
    expect(await push(1, 1, [4, 4, 4, 4])).toMatchObject({ version: 1 });
    expect(await push(2, 1, [100, 100, 100, 100])).toMatchObject({
      outcome: 'PUSH_OUTCOME_DROPPED_LATE',
      lastAppliedStep: 0,
      version: 1,
    });
    expect(await w()).toEqual([-3, -3, -3, -3]);
    // The late trainer goes on with the open step.
    expect(await push(2, 2, [1, 1, 1, 1])).toMatchObject({ outcome: 'PUSH_OUTCOME_ACCUMULATED' });
  });

  it('refuses a push with a non-finite gradient (reject policy) without counting it', async () => {
    const { push, service } = await shardUnder(sync(2));
    await expect(push(1, 1, [1, NaN, 1, 1])).rejects.toMatchObject({
      code: 'PSERVER_NON_FINITE_GRADIENT',
    });
    expect(service.consistency.lastStep(1)).toBe(0);
    expect(await push(1, 1, [1, 1, 1, 1])).toMatchObject({ outcome: 'PUSH_OUTCOME_ACCUMULATED' });
  });

  it('averages row gradients over the step’s weight, folded in trainer order, applied once at the close', async () => {
    const emb = {
      name: 'emb',
      dim: 2,
      buckets: 8,
      valueType: 'ELEMENT_TYPE_UNSPECIFIED',
      initializer: { constant: { value: 0 }, seed: 3, kind: 'constant' },
      optimizer: { sgd: {}, learningRate: { base: 1 }, algorithm: 'sgd' },
      admission: null,
      eviction: null,
      expectedRows: 0,
      pullMissing: 'PULL_MISSING_UNSPECIFIED',
    } as never;
    const { service, push, read } = await shardUnder(sync(3), sgd(1), [0, 0, 0, 0], undefined, emb);
    const ids = (...values: number[]): Buffer =>
      Buffer.from(BigInt64Array.from(values.map((v) => BigInt(v))).buffer);
    const pushRows = (trainerId: number, rowIds: number[], grads: number[], sampleCount: number) =>
      service.sendGrads(
        {
          context: { trainerId, pass: 0, step: 1, shardEpoch: epoch },
          grads: [],
          sparse: [
            { table: 'emb', ids: ids(...rowIds), grads: f32(grads), counts: Buffer.alloc(0) },
          ],
          sampleCount,
        } as SendGradsRequest__Output,
        call(),
      );
    const rows = async (...of: number[]) => {
      const reply = await service.getRows(
        {
          context: { trainerId: reader, pass: 0, step: readStep, shardEpoch: epoch },
          table: 'emb',
          ids: ids(...of),
        },
        call(),
      );
      return [...new Float32Array(Uint8Array.from(reply.values as Buffer).buffer)];
    };
    let [reader, readStep] = [0, 0];
    // A bad part is refused whole before it joins the step: nothing is kept of it.
    await expect(pushRows(2, [4], [1, 2, 3], 1)).rejects.toMatchObject({
      code: 'PSERVER_LENGTH_MISMATCH',
    });
    // Trainer 3 (weight 2) pushes rows 4 and 5 (5 twice: summed), trainer 1 (weight 1) row 4,
    // trainer 2 (weight 1) no rows but the dense tensor: rows are averaged over the step's weight
    // on the shard, 4.
    expect(await pushRows(3, [5, 4, 5], [1, 1, 2, 2, 3, 3], 2)).toMatchObject({
      outcome: 'PUSH_OUTCOME_ACCUMULATED',
    });
    await pushRows(1, [4], [4, 8], 1);
    expect(await rows(4, 5)).toEqual([0, 0, 0, 0]);
    // Trainer 1's rows of step 2 are read once step 1 closed, as its tensors are.
    [reader, readStep] = [1, 2];
    const parked = rows(4, 5);
    expect(await settled(parked)).toBe(false);
    await push(2, 1, [0, 0, 0, 0], 1);
    expect(await parked).toEqual([-2, -3, -2, -2]);
    // Row 4: (2·[2, 2] + 1·[4, 8]) / 4 = [2, 3]; row 5: 2·([1, 1] + [3, 3]) / 4 = [2, 2]; SGD, lr 1.
    expect(await rows(4, 5)).toEqual([-2, -3, -2, -2]);
    expect(await read(1, 2)).toMatchObject({ version: 1 });
  });

  it('takes a streamed contribution as a unary one', async () => {
    const { service, push, w } = await shardUnder(sync(2));
    async function* chunks(): AsyncGenerator<SendGradsChunk__Output> {
      yield {
        context: { trainerId: 2, pass: 0, step: 1, shardEpoch: epoch },
        grads: [
          {
            name: 'w',
            elementType: 'ELEMENT_TYPE_FLOAT32',
            offset: 0,
            content: f32([2, 2]),
            shape: [],
          },
        ],
        sparse: [],
        sampleCount: 1,
      };
      yield {
        context: null,
        grads: [
          {
            name: 'w',
            elementType: 'ELEMENT_TYPE_FLOAT32',
            offset: 8,
            content: f32([2, 2]),
            shape: [],
          },
        ],
        sparse: [],
      };
    }
    expect(await service.sendGradsStream(chunks(), call())).toMatchObject({
      outcome: 'PUSH_OUTCOME_ACCUMULATED',
    });
    await push(1, 1, [4, 4, 4, 4]);
    expect(await w()).toEqual([-3, -3, -3, -3]);
  });

  it('parks a read for step k until step k − 1 closed', async () => {
    const { push, read, service } = await shardUnder(sync(2));
    expect((await read(1, 1)).version).toBe(0);
    await push(2, 1, [2, 2, 2, 2]);
    const parked = read(2, 2);
    expect(await settled(parked)).toBe(false);
    await push(1, 1, [2, 2, 2, 2]);
    const reply = await parked;
    expect(reply).toMatchObject({ version: 1, minClock: 1 });
    expect(values(reply.params?.[0]?.content)).toEqual([-2, -2, -2, -2]);
    expect(service.consistency.parked.size).toBe(0);
    expect(service.consistency.parked.waitedSeconds).toBeGreaterThan(0);
  });

  it('ends a parked read at its deadline or its cancellation, leaving nothing parked', async () => {
    const { push, read, service } = await shardUnder(sync(2));
    const controller = new AbortController();
    // Trainer 1 reads step 2 in two calls; trainer 2 never finished step 1.
    await push(1, 1, [1, 1, 1, 1]);
    const cancelled = read(1, 2, call({ signal: controller.signal }));
    // The signal fires after the deadline, as the transport's does (a timer may fire a little
    // early against Date.now()).
    const deadline = Date.now() + 300;
    const timedOut = read(1, 2, call({ signal: AbortSignal.timeout(350), deadline }));
    await settled(cancelled);
    expect(service.consistency.parked.size).toBe(2);
    controller.abort(new Error('gone'));
    await expect(cancelled).rejects.toMatchObject({ code: 'CANCELLED' });
    await expect(timedOut).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
      message: expect.stringContaining('waited for step 1 to close'),
    });
    expect(service.consistency.parked.size).toBe(0);
  });

  it('answers parked reads SHUTTING_DOWN when the pserver stops', async () => {
    const { push, read, service } = await shardUnder(sync(2));
    await push(1, 1, [1, 1, 1, 1]);
    const parked = read(1, 2);
    expect(await settled(parked)).toBe(false);
    service.beginShutdown();
    await expect(parked).rejects.toBeInstanceOf(PserverError);
    await expect(parked).rejects.toMatchObject({ code: 'PSERVER_SHUTTING_DOWN' });
    await expect(read(2, 5)).rejects.toMatchObject({ code: 'PSERVER_SHUTTING_DOWN' });
    expect(service.consistency.parked.size).toBe(0);
  });

  it('checkpoints closed steps only: the open step’s contributions are never in a snapshot', async () => {
    const { push, shard } = await shardUnder(sync(2));
    await push(1, 1, [2, 2, 2, 2]);
    await push(2, 1, [2, 2, 2, 2]);
    await push(1, 2, [2, 2, 2, 2]);
    const buffers = new SnapshotBuffers();
    const copy = snapshotShard(shard, { shardEpoch: epoch, seq: 1, uuid: 'u' }, buffers);
    expect(copy.closedSteps).toBe(1);
    expect(copy.marks.map((m) => [m.trainerId, m.step])).toEqual([
      [1, 1],
      [2, 1],
    ]);
    buffers.release();
  });
});

/** A cluster's roster, changed by the test as sessions begin and end. */
class LiveRoster implements Roster {
  readonly countsFromStart = false;
  members: number[];
  /** Members registered where the roster is kept but not seen yet (`confirm` finds them). */
  unseen: number[] = [];
  private readonly listeners = new Set<() => void>();

  constructor(members: number[]) {
    this.members = members;
  }

  has(trainerId: number): boolean {
    return this.members.includes(trainerId);
  }

  confirm(trainerId: number): Promise<boolean> {
    if (this.unseen.length > 0) this.set([...this.members, ...this.unseen]);
    this.unseen = [];
    return Promise.resolve(this.has(trainerId));
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  set(members: number[]): void {
    this.members = members;
    for (const listener of this.listeners) listener();
  }
}

describe('a roster that changes (cluster jobs)', () => {
  it('SYNC: a step closes when a member that has not contributed leaves', async () => {
    const roster = new LiveRoster([1, 2, 3]);
    const { push, read, w } = await shardUnder({
      consistency: { mode: 'sync', replicasToAggregate: 0, failover: 'rerun' },
      roster,
    });
    await push(1, 1, [2, 2, 2, 2]);
    await push(2, 1, [4, 4, 4, 4]);
    const next = read(1, 2);
    expect(await settled(next)).toBe(false);
    roster.set([1, 2]); // trainer 3's session ended
    expect(await next).toMatchObject({ version: 1 });
    expect(await w()).toEqual([-3, -3, -3, -3]);
  });

  it('SYNC: a contribution made before its trainer left still counts, and the rest are waited for', async () => {
    const roster = new LiveRoster([1, 2, 3]);
    const { push, w, service } = await shardUnder({
      consistency: { mode: 'sync', replicasToAggregate: 0, failover: 'rerun' },
      roster,
    });
    await push(3, 1, [9, 9, 9, 9]);
    roster.set([1, 2]);
    expect(await push(1, 1, [3, 3, 3, 3])).toMatchObject({ version: 0 });
    expect(service.consistency.clock).toBe(0);
    expect(await push(2, 1, [6, 6, 6, 6])).toMatchObject({ version: 1 });
    expect(await w()).toEqual([-6, -6, -6, -6]);
  });

  it('SYNC: when every trainer left, the open step closes with the contributions it has', async () => {
    const roster = new LiveRoster([1, 2]);
    const { push, w, service } = await shardUnder({
      consistency: { mode: 'sync', replicasToAggregate: 0, failover: 'rerun' },
      roster,
    });
    await push(1, 1, [4, 4, 4, 4]);
    roster.set([2]);
    roster.set([]);
    expect(service.consistency.clock).toBe(1);
    expect(await w()).toEqual([-4, -4, -4, -4]);
  });

  it('SYNC: a trainer that joins while a step is open is waited for, and folded after the others', async () => {
    const roster = new LiveRoster([1, 2]);
    const { push, w } = await shardUnder({
      consistency: { mode: 'sync', replicasToAggregate: 0, failover: 'rerun' },
      roster,
    });
    await push(1, 1, [1e8, 1e8, 1e8, 1e8]);
    roster.unseen = [5]; // registered; its push arrives before the roster saw it
    expect(await push(5, 1, [1, 1, 1, 1])).toMatchObject({ version: 0 });
    expect(await push(2, 1, [-1e8, -1e8, -1e8, -1e8])).toMatchObject({ version: 1 });
    // Ascending order: (1e8 + −1e8) + 1 = 1, not (1e8 + 1) + −1e8 = 0 in float32.
    const r = Math.fround;
    expect(await w()).toEqual(Array(4).fill(r(0 - r(1 / 3))));
  });

  it('SSP: a trainer that joins counts from its first step; one that leaves is waited for no more', async () => {
    const roster = new LiveRoster([1, 2]);
    const { push, read, service } = await shardUnder({
      consistency: { mode: 'ssp', staleness: 0 },
      roster,
    });
    for (let step = 1; step <= 3; step++) {
      await read(1, step);
      await read(2, step);
      await push(1, step, [1, 1, 1, 1]);
      await push(2, step, [1, 1, 1, 1]);
    }
    roster.set([1, 2, 3]);
    expect(service.consistency.clock).toBe(3);
    expect((await read(1, 4)).minClock).toBe(3);
    // Trainer 3 starts at the clock: its first read says it finished step 3.
    await read(3, 4);
    expect(service.consistency.lastStep(3)).toBe(3);
    await push(1, 4, [1, 1, 1, 1]);
    await push(3, 4, [1, 1, 1, 1]);
    const parked = read(1, 5);
    expect(await settled(parked)).toBe(false);
    roster.set([1, 3]); // trainer 2's session ended at step 3
    expect((await parked).minClock).toBe(4);
  });

  it('refuses a trainer that is not a member after looking again', async () => {
    const roster = new LiveRoster([1]);
    const { push } = await shardUnder({ consistency: { mode: 'ssp', staleness: 1 }, roster });
    await expect(push(4, 1, [1, 1, 1, 1])).rejects.toMatchObject({
      code: 'PSERVER_NOT_IN_ROSTER',
      message: expect.stringContaining('trainer 4 is not in the roster of this SSP job'),
    });
  });
});

describe('BOUNDED_STALENESS', () => {
  it('applies pushes on arrival and parks a read only beyond the staleness bound', async () => {
    const { push, read, w, service } = await shardUnder(standalone('ssp:1', 2));
    expect(await push(1, 1, [1, 1, 1, 1])).toMatchObject({ outcome: 'PUSH_OUTCOME_APPLIED' });
    expect(await w()).toEqual([-1, -1, -1, -1]);
    // Trainer 1 reads step 2: needs every member at step 0. Goes.
    expect((await read(1, 2)).minClock).toBe(0);
    await push(1, 2, [1, 1, 1, 1]);
    // Step 3 needs the slowest at step 1: trainer 2 is at 0.
    const parked = read(1, 3);
    expect(await settled(parked)).toBe(false);
    await push(2, 1, [1, 1, 1, 1]);
    expect((await parked).minClock).toBe(1);
    expect(service.getShardStatus()).toMatchObject({
      consistency: { mode: 'CONSISTENCY_MODE_BOUNDED_STALENESS', staleness: 1 },
      minClock: 1,
      version: 3,
    });
  });

  it('re-seeds a trainer’s clock from the step it reads: it finished the one before', async () => {
    const { read, service } = await shardUnder(standalone('ssp:0', 2));
    const parked = read(1, 5);
    expect(await settled(parked)).toBe(false);
    // Trainer 2 reads step 5: it pushed step 4 everywhere, though not here (a restored shard).
    await read(2, 5).catch(() => undefined);
    expect(service.consistency.lastStep(2)).toBe(4);
    expect(await settled(parked)).toBe(true);
    expect(service.consistency.lastStep(1)).toBe(4);
  });

  it('counts a zero-sample push as the trainer’s step without changing a value', async () => {
    const { push, w, service } = await shardUnder(standalone('ssp:0', 1));
    expect(await push(1, 1, undefined, 0)).toMatchObject({ outcome: 'PUSH_OUTCOME_APPLIED' });
    expect(service.consistency.clock).toBe(1);
    expect(await w()).toEqual([0, 0, 0, 0]);
  });
});

describe('ASYNC', () => {
  it('refuses a zero-sample push with gradients and an empty push without a zero count', async () => {
    const { push } = await shardUnder({ consistency: { mode: 'async' } });
    await expect(push(1, 1, [1, 1, 1, 1], 0)).rejects.toMatchObject({
      code: 'PSERVER_INVALID_ARGUMENT',
      message: expect.stringContaining('sampleCount: 0'),
    });
    await expect(push(1, 1, undefined)).rejects.toMatchObject({
      code: 'PSERVER_INVALID_ARGUMENT',
      message: expect.stringContaining('grads: empty push'),
    });
    expect(await push(1, 1, undefined, 0)).toMatchObject({
      outcome: 'PUSH_OUTCOME_APPLIED',
      lastAppliedStep: 1,
    });
  });

  it('never parks a read', async () => {
    const { read } = await shardUnder({ consistency: { mode: 'async' } });
    expect(await read(1, 99)).toMatchObject({ minClock: 0 });
  });
});
