import { CheckpointError, type CheckpointMeta, type MetaStore } from '@pserver/checkpoint';
import { StandaloneTenure, TenureBase, type ShardTenure } from '@pserver/coordination';
import { silentLogger } from '@pserver/logging';
import {
  bucketOfBigInt,
  shardOf,
  tableShardOf,
  type OptimizerConfig__Output,
  type SendGradsChunk__Output,
  type Tensor__Output,
} from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import { AdmissionControl } from '../shard/admission';
import { ParameterService, type CheckpointSaver } from './parameter-service';
import { Shard } from '../shard/shard';

const epoch = 7;

/** Plain SGD at rate 1: the pserver subtracts each gradient as sent. */
const sgdRate1 = {
  learningRate: { base: 1 },
  nonFinite: 'NON_FINITE_POLICY_REJECT',
} as const satisfies OptimizerConfig__Output;

function context(overrides: Partial<CallContext> = {}): CallContext {
  return {
    signal: new AbortController().signal,
    deadline: Infinity,
    peer: 'test',
    logger: silentLogger,
    ...overrides,
  };
}

/**
 * Commits in memory what the shard holds when a save is asked for (the real one copies the shard
 * then too). `hold` keeps saves pending until released; `failNext` fails the next one.
 */
class FakeCheckpointer implements CheckpointSaver {
  lastCommitted: CheckpointMeta | undefined;
  /** Every save asked for. */
  readonly asked: string[] = [];
  /** Every committed save, with what the shard held and whether it was initialized. */
  readonly committed: { reason: string; initialized: boolean; shard: string }[] = [];
  failNext: Error | undefined;
  private held: Promise<void> | undefined;

  constructor(private readonly shard: Shard) {}

  hold(): () => void {
    let release = (): void => undefined;
    this.held = new Promise((resolve) => (release = resolve));
    return () => {
      this.held = undefined;
      release();
    };
  }

  async save(reason: string): Promise<CheckpointMeta> {
    this.asked.push(reason);
    const copy = { reason, initialized: this.shard.initialized, shard: snapshot(this.shard) };
    await this.held;
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure) throw failure;
    this.committed.push(copy);
    const seq = this.committed.length;
    this.lastCommitted = {
      uuid: `u${seq}`,
      path: `shard-0/e${epoch}-s${seq}-u${seq}.ckpt`,
      size: 100,
      checksumAlgorithm: 'CHECKSUM_ALGORITHM_CRC32C',
      checksum: '00000000',
      timestampNs: '1',
      shardEpoch: epoch,
      index: 0,
      seq,
      updatesApplied: this.shard.updatesApplied,
      formatVersion: 1,
      chain: [],
    };
    return this.lastCommitted;
  }
}

/** The service's tests commit through the fake checkpointer: the tenure's store is never used. */
const unusedStore: MetaStore = {
  checkpoints: [],
  everCommitted: false,
  commit: () => Promise.reject(new Error('not used')),
  forget: () => Promise.resolve(),
};

/** A cluster tenure whose linearizable confirmation answers what the test says. */
class FakeClusterTenure extends TenureBase {
  readonly mode = 'cluster';
  stillAssigned = true;

  constructor(index: number, shardCount: number) {
    super({ index, shardCount, blockSize: 4, epoch }, unusedStore);
  }

  async confirm(): Promise<boolean> {
    if (!this.stillAssigned) this.lose('assign/0 is no longer held with this epoch');
    return Promise.resolve(this.holds());
  }

  announceServing(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function setup(
  options: {
    index?: number;
    shards?: number;
    admissionBytes?: number;
    maxReplyBytes?: number;
    tenure?: (index: number, shards: number) => ShardTenure;
  } = {},
) {
  const index = options.index ?? 0;
  const shards = options.shards ?? 1;
  const tenure =
    options.tenure?.(index, shards) ??
    new StandaloneTenure({ index, shardCount: shards, epoch }, unusedStore);
  const shard = new Shard(index, shards, undefined);
  const checkpointer = new FakeCheckpointer(shard);
  const service = new ParameterService({
    shard,
    tenure,
    admission: new AdmissionControl(options.admissionBytes ?? 1 << 30),
    checkpointer,
    maxReplyBytes: options.maxReplyBytes,
  });
  return { shard, service, checkpointer, tenure };
}

const ctx = (trainerId = 1, step = 0, shardEpoch = epoch) => ({
  trainerId,
  pass: 0,
  step,
  shardEpoch,
});

function f32(values: number[]): Buffer {
  return Buffer.from(new Float32Array(values).buffer);
}

function tensor(
  name: string,
  elementType: string,
  content: Buffer,
  shape: number[] = [],
): Tensor__Output {
  return { name, elementType: elementType as Tensor__Output['elementType'], shape, content };
}

/** A whole shard as bytes: every tensor's name, type and content, in order. */
function snapshot(shard: Shard): string {
  return (
    [...shard.tensors.values()]
      .map((t) => `${t.name}:${t.elementType}:${t.content().toString('hex')}:${t.updates}`)
      .join('|') +
    `|marks:${JSON.stringify(shard.marks.entries().map((m) => [m.trainerId, m.step]))}|updates:${shard.updatesApplied}`
  );
}

async function initialized(options?: Parameters<typeof setup>[0]) {
  const { shard, service, checkpointer, tenure } = setup(options);
  await service.initParam(
    {
      context: ctx(),
      param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 2, 3, 4])),
      optimizer: { learningRate: { base: 0.5 } },
    } as never,
    context(),
  );
  await service.initParam(
    {
      context: ctx(),
      param: tensor('d', 'ELEMENT_TYPE_FLOAT64', Buffer.from(new Float64Array([10, 20]).buffer)),
      optimizer: sgdRate1,
    },
    context(),
  );
  await service.initParam(
    {
      context: ctx(),
      param: tensor(
        'ids',
        'ELEMENT_TYPE_INT64',
        Buffer.from(new BigInt64Array([5n, -6n]).buffer),
        [2],
      ),
      optimizer: null,
    },
    context(),
  );
  await service.finishInitParams({ context: ctx() }, context());
  return { shard, service, checkpointer, tenure };
}

const push = (step: number, grads: Tensor__Output[], trainerId = 1) => ({
  context: ctx(trainerId, step),
  grads,
  sparse: [],
});

describe('ParameterService', () => {
  describe('initialization', () => {
    it('stores tensors of every element type and returns them in request order', async () => {
      const { service } = await initialized();
      const reply = await service.getParams(
        { context: ctx(), names: ['ids', 'w', 'd'] },
        context(),
      );
      expect(reply.shardEpoch).toBe(epoch);
      expect(reply.params!.map((p) => [p.name, p.elementType, p.shape])).toEqual([
        ['ids', 'ELEMENT_TYPE_INT64', [2]],
        ['w', 'ELEMENT_TYPE_FLOAT32', []],
        ['d', 'ELEMENT_TYPE_FLOAT64', []],
      ]);
      expect(Buffer.compare(reply.params![1]!.content as Buffer, f32([1, 2, 3, 4]))).toBe(0);
    });

    it('answers "already initialized" to InitParam and FinishInitParams after FinishInitParams', async () => {
      const { service } = await initialized();
      const again = {
        context: ctx(),
        param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([0])),
        optimizer: sgdRate1,
      };
      await expect(service.initParam(again, context())).rejects.toMatchObject({
        code: 'PSERVER_ALREADY_INITIALIZED',
      });
      await expect(service.finishInitParams({ context: ctx() }, context())).rejects.toMatchObject({
        code: 'PSERVER_ALREADY_INITIALIZED',
      });
    });

    it('refuses a bad optimizer config as bad input also after initialization', async () => {
      const { service } = await initialized();
      const noRate = {
        context: ctx(),
        param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([0])),
        optimizer: { sgd: {} },
      };
      await expect(service.initParam(noRate as never, context())).rejects.toMatchObject({
        code: 'OPTIMIZER_INVALID_CONFIG',
      });
    });

    it('commits a checkpoint of the initial values before FinishInitParams answers', async () => {
      const { shard, service, checkpointer } = setup();
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 2])),
          optimizer: sgdRate1,
        },
        context(),
      );
      const initial = snapshot(shard);
      const finished = service.finishInitParams({ context: ctx() }, context());
      // Not initialized until the checkpoint is committed.
      expect(shard.initialized).toBe(false);
      await expect(finished).resolves.toEqual({ shardEpoch: epoch });
      expect(checkpointer.committed).toEqual([
        { reason: 'initialized', initialized: false, shard: initial },
      ]);
      expect(shard.initialized).toBe(true);
      expect(service.getShardStatus().lastCheckpoint).toMatchObject({ seq: 1 });
    });

    it('fails FinishInitParams with the checkpoint error and stays uninitialized; a retry works', async () => {
      const { shard, service, checkpointer } = setup();
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
          optimizer: sgdRate1,
        },
        context(),
      );
      const waiting = service.getParams({ context: ctx(), names: ['w'] }, context());
      checkpointer.failNext = new CheckpointError('CHECKPOINT_NO_SPACE', 'no space left');
      await expect(service.finishInitParams({ context: ctx() }, context())).rejects.toMatchObject({
        code: 'CHECKPOINT_NO_SPACE',
      });
      expect(shard.initialized).toBe(false);
      expect(checkpointer.committed).toEqual([]);
      // Still before initialization: pushes are refused, InitParam still replaces.
      await expect(
        service.sendGrads(push(1, [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1]))]), context()),
      ).rejects.toMatchObject({ code: 'PSERVER_NOT_INITIALIZED' });
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([7])),
          optimizer: sgdRate1,
        },
        context(),
      );
      await expect(service.finishInitParams({ context: ctx() }, context())).resolves.toEqual({
        shardEpoch: epoch,
      });
      expect(checkpointer.committed).toHaveLength(1);
      const reply = await waiting;
      expect(Buffer.compare(reply.params![0]!.content as Buffer, f32([7]))).toBe(0);
      // A retry after success: "already initialized" (success to an initializing client), and
      // no second checkpoint.
      await expect(service.finishInitParams({ context: ctx() }, context())).rejects.toMatchObject({
        code: 'PSERVER_ALREADY_INITIALIZED',
      });
      expect(checkpointer.asked).toEqual(['initialized', 'initialized']);
    });

    it('answers a FinishInitParams that arrives while one commits with its outcome, and holds InitParam until then', async () => {
      const { shard, service, checkpointer } = setup();
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
          optimizer: sgdRate1,
        },
        context(),
      );
      const initial = snapshot(shard);
      const release = checkpointer.hold();
      const first = service.finishInitParams({ context: ctx() }, context());
      const retry = service.finishInitParams({ context: ctx() }, context());
      const late = service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([9])),
          optimizer: sgdRate1,
        },
        context(),
      );
      await new Promise((resolve) => setImmediate(resolve));
      expect(snapshot(shard)).toBe(initial);
      release();
      await expect(first).resolves.toEqual({ shardEpoch: epoch });
      await expect(retry).resolves.toEqual({ shardEpoch: epoch });
      await expect(late).rejects.toMatchObject({ code: 'PSERVER_ALREADY_INITIALIZED' });
      expect(checkpointer.asked).toEqual(['initialized']);
      expect(checkpointer.committed.map((c) => c.shard)).toEqual([initial]);
      expect(snapshot(shard)).toBe(initial);
    });

    it('when the commit both wait for fails, both calls fail and InitParam then applies', async () => {
      const { shard, service, checkpointer } = setup();
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
          optimizer: sgdRate1,
        },
        context(),
      );
      const release = checkpointer.hold();
      checkpointer.failNext = new CheckpointError('CHECKPOINT_IO', 'EIO');
      const first = service.finishInitParams({ context: ctx() }, context());
      const retry = service.finishInitParams({ context: ctx() }, context());
      const late = service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([9])),
          optimizer: sgdRate1,
        },
        context(),
      );
      release();
      await expect(first).rejects.toMatchObject({ code: 'CHECKPOINT_IO' });
      await expect(retry).rejects.toMatchObject({ code: 'CHECKPOINT_IO' });
      await expect(late).resolves.toEqual({ shardEpoch: epoch });
      expect(shard.initialized).toBe(false);
      expect([
        ...new Float32Array(Uint8Array.from(shard.tensors.get('w')!.content()).buffer),
      ]).toEqual([9]);
    });

    it('replaces a tensor initialized twice before FinishInitParams', async () => {
      const { service, shard } = setup();
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
          optimizer: sgdRate1,
        },
        context(),
      );
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([2, 3])),
          optimizer: sgdRate1,
        },
        context(),
      );
      expect(shard.tensors.get('w')!.elements).toBe(2);
    });

    it.each([
      [
        'an empty name',
        tensor('', 'ELEMENT_TYPE_FLOAT32', f32([1])),
        'PSERVER_INVALID_NAME',
        'param.name: "" is empty',
      ],
      [
        'a name with two @',
        tensor('a@b@1', 'ELEMENT_TYPE_FLOAT32', f32([1])),
        'PSERVER_INVALID_NAME',
        'contains @ more than once',
      ],
      [
        'no element type',
        tensor('w', 'ELEMENT_TYPE_UNSPECIFIED', f32([1])),
        'PSERVER_INVALID_ELEMENT_TYPE',
        'element type ELEMENT_TYPE_UNSPECIFIED',
      ],
      [
        'a partial element',
        tensor('w', 'ELEMENT_TYPE_FLOAT64', Buffer.alloc(12)),
        'PSERVER_LENGTH_MISMATCH',
        '12 bytes is not a whole number of ELEMENT_TYPE_FLOAT64 elements',
      ],
      [
        'a shape that does not fit',
        tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 2]), [3]),
        'PSERVER_LENGTH_MISMATCH',
        'shape [3] holds 3 elements, content has 2',
      ],
    ])('refuses %s', async (_what, param, code, message) => {
      const { service, shard } = setup();
      await expect(
        service.initParam({ context: ctx(), param, optimizer: null }, context()),
      ).rejects.toMatchObject({
        code,
        message: expect.stringContaining(message),
      });
      expect(shard.tensors.size).toBe(0);
    });

    it('refuses a bad optimizer config, naming the tensor, the field and the value', async () => {
      const { service, shard } = setup();
      const request = {
        context: ctx(),
        param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
        optimizer: { adam: { beta1: 2 } },
      };
      await expect(service.initParam(request as never, context())).rejects.toMatchObject({
        code: 'OPTIMIZER_INVALID_CONFIG',
        message: 'param w: optimizer config: adam.beta1 must be in [0, 1), got 2',
      });
      expect(shard.tensors.size).toBe(0);
    });

    it('refuses a shape dimension above 2^53 − 1, which would be stored rounded', async () => {
      // A block's shape may hold more elements than the block: 2^64 − 1 passes that check, yet
      // arrives as a JS number that would be kept, and sent back, as 2^64.
      const { service, shard } = setup();
      const request = {
        context: ctx(),
        param: tensor('w@0', 'ELEMENT_TYPE_FLOAT32', f32([1]), [2 ** 64]),
        optimizer: sgdRate1,
      };
      await expect(service.initParam(request, context())).rejects.toMatchObject({
        code: 'PSERVER_INVALID_ARGUMENT',
        message: expect.stringContaining(
          'param w@0: shape: must be at most 2^53 − 1 (larger values are not kept exactly), got 18446744073709552000',
        ),
      });
      expect(shard.tensors.size).toBe(0);
      request.param.shape = [2 ** 53 - 1];
      await expect(service.initParam(request, context())).resolves.toEqual({ shardEpoch: epoch });
    });

    it('refuses a block placed on another shard', async () => {
      const { service } = setup({ index: 0, shards: 4 });
      const name = ['a', 'b', 'c', 'd', 'e', 'f'].find((n) => shardOf(n, 4) !== 0)!;
      await expect(
        service.initParam(
          {
            context: ctx(),
            param: tensor(name, 'ELEMENT_TYPE_FLOAT32', f32([1])),
            optimizer: null,
          },
          context(),
        ),
      ).rejects.toMatchObject({
        code: 'PSERVER_WRONG_SHARD',
        message: expect.stringContaining(`this is shard 0`),
      });
    });
  });

  describe('epochs', () => {
    it('answers a lower epoch ABORTED-style with the current epoch as a fact', async () => {
      const { service } = await initialized();
      await expect(
        service.getParams({ context: ctx(1, 0, epoch - 1), names: ['w'] }, context()),
      ).rejects.toMatchObject({
        code: 'PSERVER_STALE_EPOCH',
        facts: { shardEpoch: epoch },
      });
    });

    it('refuses a higher epoch as bogus', async () => {
      const { service } = await initialized();
      await expect(
        service.sendGrads(
          push(1, [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1]))]) && {
            ...push(1, []),
            context: ctx(1, 1, 1e15),
          },
          context(),
        ),
      ).rejects.toMatchObject({
        code: 'PSERVER_BOGUS_EPOCH',
      });
    });
  });

  describe('the tenure', () => {
    const cluster = {
      tenure: (index: number, shards: number) => new FakeClusterTenure(index, shards),
    };

    it('calls a higher epoch bogus while a linearizable read confirms the tenure, and fenced once it does not', async () => {
      const { service, tenure } = await initialized(cluster);
      const higher = { context: ctx(1, 0, epoch + 1), names: ['w'] };
      await expect(service.getParams(higher, context())).rejects.toMatchObject({
        code: 'PSERVER_BOGUS_EPOCH',
      });
      expect(tenure.holds()).toBe(true);
      (tenure as FakeClusterTenure).stillAssigned = false;
      await expect(service.getParams(higher, context())).rejects.toMatchObject({
        code: 'PSERVER_FENCED',
      });
      expect(tenure.holds()).toBe(false);
    });

    it('refuses every call once the tenure is lost, and applies no push', async () => {
      const { service, shard, tenure } = await initialized(cluster);
      const before = snapshot(shard);
      tenure.lose('replaced');
      const grads = [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1]))];
      await expect(service.sendGrads(push(1, grads), context())).rejects.toMatchObject({
        code: 'PSERVER_FENCED',
      });
      await expect(
        service.getParams({ context: ctx(), names: ['w'] }, context()),
      ).rejects.toMatchObject({ code: 'PSERVER_FENCED' });
      expect(snapshot(shard)).toBe(before);
    });

    it('does not apply a streamed push whose tenure ended after its last piece arrived', async () => {
      const { service, shard, tenure } = await initialized(cluster);
      const before = snapshot(shard);
      const piece = (offset: number) => ({
        name: 'w',
        elementType: 'ELEMENT_TYPE_FLOAT32' as const,
        offset,
        shape: [],
        content: f32([1, 1]),
      });
      async function* chunks(): AsyncGenerator<SendGradsChunk__Output> {
        yield { context: ctx(1, 1), grads: [piece(0)], sparse: [] } as never;
        yield { context: null, grads: [piece(8)], sparse: [] } as never;
        // Ends between the last piece and the apply: the check right before applying catches it.
        tenure.lose('the lease deadline passed');
      }
      await expect(service.sendGradsStream(chunks(), context())).rejects.toMatchObject({
        code: 'PSERVER_FENCED',
      });
      expect(snapshot(shard)).toBe(before);
    });

    it('answers a GetParams waiting for initialization PSERVER_FENCED when the tenure ends', async () => {
      const { service, tenure } = setup(cluster);
      const waiting = service.getParams({ context: ctx(), names: ['w'] }, context());
      tenure.lose('assign/0 was deleted');
      await expect(waiting).rejects.toMatchObject({
        code: 'PSERVER_FENCED',
        message: expect.stringContaining('assign/0 was deleted'),
      });
    });
  });

  describe('pushes', () => {
    it('applies a push and acknowledges a repeated step as a duplicate without applying it again', async () => {
      const { service, shard } = await initialized();
      const grads = [
        tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([2, 2, 2, 2])),
        tensor('d', 'ELEMENT_TYPE_FLOAT64', Buffer.from(new Float64Array([1, 1]).buffer)),
      ];
      await expect(service.sendGrads(push(1, grads), context())).resolves.toMatchObject({
        outcome: 'PUSH_OUTCOME_APPLIED',
        lastAppliedStep: 1,
      });
      const after = snapshot(shard);
      await expect(service.sendGrads(push(1, grads), context())).resolves.toMatchObject({
        outcome: 'PUSH_OUTCOME_DUPLICATE',
        lastAppliedStep: 1,
      });
      expect(snapshot(shard)).toBe(after);
      expect([
        ...new Float32Array(Uint8Array.from(shard.tensors.get('w')!.content()).buffer),
      ]).toEqual([0, 1, 2, 3]);
      expect([
        ...new Float64Array(Uint8Array.from(shard.tensors.get('d')!.content()).buffer),
      ]).toEqual([9, 19]);
    });

    it('refuses a trainer id or step above 2^53 − 1 (they would round: marks shared, steps stored wrong)', async () => {
      const { service, shard } = await initialized();
      const before = snapshot(shard);
      const grads = [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1]))];
      // 2^53 + 1 arrives as 2^53: two steps (or trainers) would be one.
      for (const [trainerId, step] of [
        [1, 2 ** 53],
        [2 ** 53, 1],
        [1, 2 ** 64],
      ]) {
        await expect(
          service.sendGrads(push(step!, grads, trainerId), context()),
        ).rejects.toMatchObject({ code: 'PSERVER_INVALID_CONTEXT' });
      }
      expect(snapshot(shard)).toBe(before);
      await expect(
        service.sendGrads(push(2 ** 53 - 1, grads, 2 ** 53 - 1), context()),
      ).resolves.toMatchObject({ outcome: 'PUSH_OUTCOME_APPLIED', lastAppliedStep: 2 ** 53 - 1 });
    });

    it('keeps step marks per trainer', async () => {
      const { service } = await initialized();
      const grads = [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1]))];
      await service.sendGrads(push(5, grads, 1), context());
      await expect(service.sendGrads(push(1, grads, 2), context())).resolves.toMatchObject({
        outcome: 'PUSH_OUTCOME_APPLIED',
      });
    });

    it('refuses pushes before initialization', async () => {
      const { service } = setup();
      await expect(service.sendGrads(push(1, []), context())).rejects.toMatchObject({
        code: 'PSERVER_NOT_INITIALIZED',
      });
    });

    const bad: [string, Tensor__Output[], string, string][] = [
      [
        'a wrong element type',
        [tensor('w', 'ELEMENT_TYPE_FLOAT64', Buffer.alloc(32))],
        'PSERVER_ELEMENT_TYPE_MISMATCH',
        'element type ELEMENT_TYPE_FLOAT64, the parameter is ELEMENT_TYPE_FLOAT32',
      ],
      [
        'a wrong length',
        [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 2, 3]))],
        'PSERVER_LENGTH_MISMATCH',
        'gradient w: 12 bytes, the parameter has 16',
      ],
      [
        'an unknown name',
        [tensor('nope', 'ELEMENT_TYPE_FLOAT32', f32([1]))],
        'PSERVER_UNKNOWN_TENSOR',
        'gradient nope: no such tensor',
      ],
      [
        'an empty name',
        [tensor('', 'ELEMENT_TYPE_FLOAT32', f32([1]))],
        'PSERVER_INVALID_NAME',
        'grads.name: "" is empty',
      ],
      [
        'a NaN',
        [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([0, Number.NaN, 0, 0]))],
        'PSERVER_NON_FINITE_GRADIENT',
        'gradient w: holds NaN or Infinity',
      ],
      [
        'an integer tensor',
        [tensor('ids', 'ELEMENT_TYPE_INT64', Buffer.alloc(16))],
        'PSERVER_NOT_OPTIMIZABLE',
        'stored, not optimized',
      ],
      [
        'a name twice',
        [
          tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1])),
          tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1])),
        ],
        'PSERVER_DUPLICATE_NAME',
        'appears more than once',
      ],
      ['no gradients', [], 'PSERVER_INVALID_ARGUMENT', 'grads: empty push'],
    ];
    it.each(bad)(
      'refuses %s and leaves every byte of the shard as it was',
      async (_what, badGrads, code, message) => {
        const { service, shard } = await initialized();
        const before = snapshot(shard);
        // A good gradient first: it must not be applied either.
        const grads = badGrads.length
          ? [
              tensor('d', 'ELEMENT_TYPE_FLOAT64', Buffer.from(new Float64Array([1, 1]).buffer)),
              ...badGrads,
            ]
          : [];
        await expect(service.sendGrads(push(1, grads), context())).rejects.toMatchObject({
          code,
          message: expect.stringContaining(message),
        });
        expect(snapshot(shard)).toBe(before);
      },
    );

    it.each([
      [
        'no trainer id',
        { trainerId: 0, pass: 0, step: 1, shardEpoch: epoch },
        'context.trainerId: required',
      ],
      [
        'step 0',
        { trainerId: 1, pass: 0, step: 0, shardEpoch: epoch },
        'context.step: must be ≥ 1',
      ],
    ])('refuses a push with %s', async (_what, context_, message) => {
      const { service } = await initialized();
      await expect(
        service.sendGrads({ context: context_, grads: [], sparse: [] }, context()),
      ).rejects.toMatchObject({
        code: 'PSERVER_INVALID_CONTEXT',
        message: expect.stringContaining(message),
      });
    });

    it('refuses a push over the admission limit with a retry hint, changing nothing', async () => {
      const { service, shard } = await initialized({ admissionBytes: 8 });
      const before = snapshot(shard);
      await expect(
        service.sendGrads(
          push(1, [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1]))]),
          context(),
        ),
      ).rejects.toMatchObject({
        code: 'PSERVER_OVERLOADED',
        facts: { retryAfterMs: 100 },
      });
      expect(snapshot(shard)).toBe(before);
      expect(service.getShardStatus().pushBytesInFlight).toBe(0);
    });

    it('skips a non-finite gradient under the skip policy and applies the rest', async () => {
      const { service, shard } = setup();
      await service.initParam(
        {
          context: ctx(),
          param: tensor('s', 'ELEMENT_TYPE_FLOAT32', f32([1])),
          optimizer: { nonFinite: 'NON_FINITE_POLICY_SKIP', learningRate: { base: 1 } },
        } as never,
        context(),
      );
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
          optimizer: sgdRate1,
        },
        context(),
      );
      await service.finishInitParams({ context: ctx() }, context());
      const reply = await service.sendGrads(
        push(1, [
          tensor('s', 'ELEMENT_TYPE_FLOAT32', f32([Infinity])),
          tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
        ]),
        context(),
      );
      expect(reply).toMatchObject({ outcome: 'PUSH_OUTCOME_APPLIED', skippedNonFinite: ['s'] });
      expect(shard.tensors.get('s')!.updates).toBe(0);
      expect(shard.tensors.get('w')!.updates).toBe(1);
    });
  });

  describe('learning rates', () => {
    it.each<[string, unknown]>([
      ['no config', null],
      ['an empty config', { learningRate: null, nonFinite: 'NON_FINITE_POLICY_REJECT' }],
      ['sgd', { sgd: {}, learningRate: null }],
      ['sgd with momentum', { sgd: { momentum: 0.9 }, learningRate: { policy: 'constant' } }],
    ])(
      'refuses plain SGD without a rate (%s), naming the tensor and the field',
      async (_what, optimizer) => {
        const { service, shard } = setup();
        await expect(
          service.initParam(
            {
              context: ctx(),
              param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1])),
              optimizer,
            } as never,
            context(),
          ),
        ).rejects.toMatchObject({
          code: 'OPTIMIZER_INVALID_CONFIG',
          message: expect.stringMatching(/^param w: .*optimizer\.learning_rate\.base is required/),
        });
        expect(shard.tensors.size).toBe(0);
      },
    );

    it("gives each rule PyTorch's rate when unset, applies it, and lists and checkpoints it filled in", async () => {
      const { service, shard } = setup();
      const rules: [string, object, number][] = [
        ['adam', { adam: {} }, 1e-3],
        ['adamw', { adamw: { weightDecay: 0 } }, 1e-3],
        ['adagrad', { adagrad: {} }, 1e-2],
        ['rmsprop', { rmsprop: {} }, 1e-2],
        ['adadelta', { adadelta: {} }, 1.0],
        ['sgd', { sgd: { momentum: 0.5 }, learningRate: { base: 0.25 } }, 0.25],
      ];
      for (const [name, optimizer] of rules) {
        await service.initParam(
          {
            context: ctx(),
            param: tensor(name, 'ELEMENT_TYPE_FLOAT64', Buffer.from(new Float64Array([0]).buffer)),
            optimizer: { learningRate: null, nonFinite: 'NON_FINITE_POLICY_REJECT', ...optimizer },
          } as never,
          context(),
        );
      }
      await service.finishInitParams({ context: ctx() }, context());
      const listed = await service.listParams({ context: ctx() }, context());
      expect(
        Object.fromEntries(listed.params!.map((p) => [p.name, p.optimizer?.learningRate?.base])),
      ).toEqual(Object.fromEntries(rules.map(([name, , rate]) => [name, rate])));
      // What a checkpoint writes carries the rate, so a later default cannot move it.
      const buffers = { copy: (b: Uint8Array) => b } as never;
      expect(shard.tensors.get('adam')!.snapshot(buffers).optimizer).toMatchObject({
        adam: {},
        learningRate: { base: 1e-3 },
      });
      // Adam's first step moves by about the rate, whatever the gradient's scale.
      await service.sendGrads(
        push(1, [
          tensor('adam', 'ELEMENT_TYPE_FLOAT64', Buffer.from(new Float64Array([1]).buffer)),
        ]),
        context(),
      );
      const [value] = new Float64Array(
        Uint8Array.from(shard.tensors.get('adam')!.content()).buffer,
      );
      expect(value).toBeCloseTo(-1e-3, 9);
    });
  });

  describe('gradient shapes', () => {
    /** `m` of shape [2, 2], `v` a flat vector of 3, `b@1` a block of a flat vector; SGD at rate 1. */
    async function shaped() {
      const { service, shard } = setup();
      const sgd = { sgd: {}, learningRate: { base: 1 } };
      for (const param of [
        tensor('m', 'ELEMENT_TYPE_FLOAT32', f32([1, 2, 3, 4]), [2, 2]),
        tensor('v', 'ELEMENT_TYPE_FLOAT32', f32([1, 2, 3])),
        tensor('b@1', 'ELEMENT_TYPE_FLOAT32', f32([1, 2])),
      ]) {
        await service.initParam({ context: ctx(), param, optimizer: sgd } as never, context());
      }
      await service.finishInitParams({ context: ctx() }, context());
      return { service, shard };
    }
    const grad = (name: string, values: number[], shape: number[]) =>
      tensor(name, 'ELEMENT_TYPE_FLOAT32', f32(values), shape);

    it("applies gradients whose shape is the tensor's, or empty, or 1-D for a flat vector", async () => {
      const { service, shard } = await shaped();
      await service.sendGrads(
        push(1, [
          grad('m', [1, 1, 1, 1], [2, 2]),
          grad('v', [1, 1, 1], [3]),
          grad('b@1', [1, 1], [6]),
        ]),
        context(),
      );
      await service.sendGrads(
        push(2, [grad('m', [1, 1, 1, 1], []), grad('v', [1, 1, 1], []), grad('b@1', [1, 1], [])]),
        context(),
      );
      expect(shard.tensors.get('m')!.updates).toBe(2);
      expect(shard.tensors.get('v')!.updates).toBe(2);
      expect(shard.tensors.get('b@1')!.updates).toBe(2);
    });

    it.each([
      [
        'a transposed shape',
        grad('m', [1, 1, 1, 1], [4, 1]),
        "gradient m: shape [4, 1], the parameter's shape is [2, 2]",
      ],
      [
        'a flattened shape',
        grad('m', [1, 1, 1, 1], [4]),
        "gradient m: shape [4], the parameter's shape is [2, 2]",
      ],
      [
        'more dimensions',
        grad('m', [1, 1, 1, 1], [2, 2, 1]),
        "shape [2, 2, 1], the parameter's shape is [2, 2]",
      ],
      [
        'a 2-D shape for a flat vector',
        grad('v', [1, 1, 1], [3, 1]),
        "gradient v: shape [3, 1], the parameter's shape is a flat vector (empty or [3])",
      ],
      ['a 1-D shape of another length', grad('v', [1, 1, 1], [4]), 'gradient v: shape [4]'],
      [
        "a block's vector shorter than the block",
        grad('b@1', [1, 1], [1]),
        "gradient b@1: shape [1], the parameter's shape is a flat vector (empty or 1-D of at least 2 elements)",
      ],
      [
        'a dimension beyond 2^53',
        grad('m', [1, 1, 1, 1], [2 ** 64, 2]),
        'shape [18446744073709552000, 2]',
      ],
    ])(
      'refuses %s with PSERVER_SHAPE_MISMATCH and changes no byte',
      async (_what, bad, message) => {
        const { service, shard } = await shaped();
        const before = snapshot(shard);
        // A good gradient of another tensor first: the whole push is refused.
        const good = bad.name === 'b@1' ? grad('v', [1, 1, 1], [3]) : grad('b@1', [1, 1], [2]);
        await expect(service.sendGrads(push(1, [good, bad]), context())).rejects.toMatchObject({
          code: 'PSERVER_SHAPE_MISMATCH',
          message: expect.stringContaining(message),
        });
        expect(snapshot(shard)).toBe(before);
      },
    );

    it("checks a streamed gradient's shape from its piece at offset 0, changing nothing when wrong", async () => {
      const { service, shard } = await shaped();
      const before = snapshot(shard);
      const chunk = (offset: number, values: number[], shape: number[]) => ({
        name: 'm',
        elementType: 'ELEMENT_TYPE_FLOAT32' as const,
        offset,
        shape,
        content: f32(values),
      });
      async function* stream(
        ...messages: SendGradsChunk__Output[]
      ): AsyncIterable<SendGradsChunk__Output> {
        yield* messages;
      }
      await expect(
        service.sendGradsStream(
          stream(
            { context: ctx(1, 1), grads: [chunk(0, [1, 1], [4, 1])], sparse: [] },
            { context: null, grads: [chunk(8, [1, 1], [])], sparse: [] },
          ),
          context(),
        ),
      ).rejects.toMatchObject({
        code: 'PSERVER_SHAPE_MISMATCH',
        message: "gradient m: shape [4, 1], the parameter's shape is [2, 2]",
      });
      expect(snapshot(shard)).toBe(before);
      expect(service.getShardStatus().pushBytesInFlight).toBe(0);
      // Later pieces' shapes are not read.
      await expect(
        service.sendGradsStream(
          stream(
            { context: ctx(1, 1), grads: [chunk(0, [1, 1], [2, 2])], sparse: [] },
            { context: null, grads: [chunk(8, [1, 1], [9])], sparse: [] },
          ),
          context(),
        ),
      ).resolves.toMatchObject({ outcome: 'PUSH_OUTCOME_APPLIED' });
      expect(shard.tensors.get('m')!.updates).toBe(1);
    });
  });

  describe('streamed pushes', () => {
    async function* chunks(
      ...messages: SendGradsChunk__Output[]
    ): AsyncIterable<SendGradsChunk__Output> {
      yield* messages;
    }
    const piece = (name: string, offset: number, values: number[]) => ({
      name,
      elementType: 'ELEMENT_TYPE_FLOAT32' as const,
      offset,
      shape: [],
      content: f32(values),
    });

    it('assembles pieces and applies them when the stream completes', async () => {
      const { service, shard } = await initialized();
      const reply = await service.sendGradsStream(
        chunks(
          { context: ctx(1, 1), grads: [piece('w', 0, [2, 2])], sparse: [] },
          { context: null, grads: [piece('w', 8, [2, 2])], sparse: [] },
        ),
        context(),
      );
      expect(reply.outcome).toBe('PUSH_OUTCOME_APPLIED');
      expect([
        ...new Float32Array(Uint8Array.from(shard.tensors.get('w')!.content()).buffer),
      ]).toEqual([0, 1, 2, 3]);
      expect(service.getShardStatus().pushBytesInFlight).toBe(0);
    });

    it('changes nothing when the stream ends early, breaks off or has a gap', async () => {
      const { service, shard } = await initialized();
      const before = snapshot(shard);
      await expect(
        service.sendGradsStream(
          chunks({ context: ctx(1, 1), grads: [piece('w', 0, [2, 2])], sparse: [] }),
          context(),
        ),
      ).rejects.toMatchObject({
        code: 'PSERVER_INVALID_STREAM',
        message: 'gradient w: the stream ended after 8 of 16 bytes',
      });
      await expect(
        service.sendGradsStream(
          chunks({
            context: ctx(1, 1),
            grads: [piece('w', 0, [2]), piece('w', 8, [2, 2])],
            sparse: [],
          }),
          context(),
        ),
      ).rejects.toMatchObject({
        code: 'PSERVER_INVALID_STREAM',
        message: 'gradient w: piece at offset 8, expected 4',
      });
      async function* broken(): AsyncIterable<SendGradsChunk__Output> {
        yield { context: ctx(1, 1), grads: [piece('w', 0, [2, 2])], sparse: [] };
        throw new Error('connection reset');
      }
      await expect(service.sendGradsStream(broken(), context())).rejects.toThrow(
        'connection reset',
      );
      expect(snapshot(shard)).toBe(before);
      expect(service.getShardStatus().pushBytesInFlight).toBe(0);
    });
  });

  describe('GetParams replies', () => {
    it('refuses a reply above the message limit, naming its bytes and the limit; fewer tensors pass', async () => {
      // w holds 16 bytes and d 16: together, with names and framing, above 64 bytes.
      const { service } = await initialized({ maxReplyBytes: 64 });
      await expect(
        service.getParams({ context: ctx(), names: ['w', 'd'] }, context()),
      ).rejects.toMatchObject({
        code: 'PSERVER_REPLY_TOO_LARGE',
        message: expect.stringMatching(
          /^GetParams: the reply would hold 32 bytes of 2 tensors \(up to \d+ encoded\), above the server's message limit of 64 bytes/,
        ),
      });
      for (const name of ['w', 'd']) {
        await expect(
          service.getParams({ context: ctx(), names: [name] }, context()),
        ).resolves.toMatchObject({ params: [{ name }] });
      }
    });
  });

  describe('GetParams before initialization', () => {
    it('waits until FinishInitParams', async () => {
      const { service } = setup();
      await service.initParam(
        {
          context: ctx(),
          param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([5])),
          optimizer: sgdRate1,
        },
        context(),
      );
      const waiting = service.getParams({ context: ctx(), names: ['w'] }, context());
      await service.finishInitParams({ context: ctx() }, context());
      await expect(waiting).resolves.toMatchObject({ params: [{ name: 'w' }] });
    });

    it('stops waiting when the call is cancelled or the deadline passes', async () => {
      const { service } = setup();
      const controller = new AbortController();
      const cancelled = service.getParams(
        { context: ctx(), names: ['w'] },
        context({ signal: controller.signal }),
      );
      controller.abort(new Error('cancelled'));
      await expect(cancelled).rejects.toMatchObject({ code: 'CANCELLED' });
      const expired = new AbortController();
      const late = service.getParams(
        { context: ctx(), names: ['w'] },
        context({ signal: expired.signal, deadline: Date.now() - 1 }),
      );
      expired.abort(new Error('deadline'));
      await expect(late).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    });

    it('answers waiting calls UNAVAILABLE on shutdown, and refuses changes from then on', async () => {
      const { service } = setup();
      const waiting = service.getParams({ context: ctx(), names: ['w'] }, context());
      service.beginShutdown();
      await expect(waiting).rejects.toMatchObject({ code: 'PSERVER_SHUTTING_DOWN' });
      await expect(service.finishInitParams({ context: ctx() }, context())).rejects.toMatchObject({
        code: 'PSERVER_SHUTTING_DOWN',
      });
    });
  });

  it('forgets the step marks of trainers silent for long, and only theirs', () => {
    const { shard } = setup();
    shard.marks.set(1, 5, 1_000);
    shard.marks.set(2, 9, 5_000);
    expect(shard.marks.prune(2_000)).toBe(1);
    expect(shard.marks.entries().map((m) => m.trainerId)).toEqual([2]);
  });

  it('reports its status', async () => {
    const { service } = await initialized();
    await service.sendGrads(
      push(1, [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1, 1, 1]))]),
      context(),
    );
    expect(service.getShardStatus()).toMatchObject({
      index: 0,
      shardCount: 1,
      shardEpoch: epoch,
      mode: 'SHARD_MODE_STANDALONE',
      initialized: true,
      totalBytes: 16 + 16 + 16,
      updatesApplied: 1,
      trainers: 1,
      tensors: expect.arrayContaining([
        {
          name: 'w',
          elementType: 'ELEMENT_TYPE_FLOAT32',
          shape: [],
          elements: 4,
          bytes: 16,
          updates: 1,
          optimizer: 'sgd',
        },
        {
          name: 'ids',
          elementType: 'ELEMENT_TYPE_INT64',
          shape: [2],
          elements: 2,
          bytes: 16,
          updates: 0,
          optimizer: 'none',
        },
      ]),
    });
  });
});

describe('ParameterService tables', () => {
  const ids = (...values: number[]): Buffer =>
    Buffer.from(BigInt64Array.from(values.map((v) => BigInt(v))).buffer);
  const spec = {
    name: 'emb',
    dim: 2,
    buckets: 8,
    valueType: 'ELEMENT_TYPE_UNSPECIFIED',
    initializer: { constant: { value: 1 }, seed: 3, kind: 'constant' },
    optimizer: { sgd: {}, learningRate: { base: 1 }, algorithm: 'sgd' },
    admission: null,
    eviction: null,
    expectedRows: 0,
    pullMissing: 'PULL_MISSING_UNSPECIFIED',
  } as never;
  async function withTable(shards = 1) {
    const { shard, service } = setup({ shards });
    await service.initParam(
      {
        context: ctx(),
        param: tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 2])),
        optimizer: sgdRate1,
      },
      context(),
    );
    await service.initTable({ context: ctx(), spec }, context());
    await service.finishInitParams({ context: ctx() }, context());
    return { shard, service };
  }
  const rows = async (service: ParameterService, ...of: number[]) => {
    const reply = await service.getRows(
      { context: ctx(), table: 'emb', ids: ids(...of) },
      context(),
    );
    return [...new Float32Array(Uint8Array.from(reply.values as Buffer).buffer)];
  };
  async function* chunks(...messages: SendGradsChunk__Output[]) {
    yield* messages;
  }
  const denseW = [
    {
      name: 'w',
      elementType: 'ELEMENT_TYPE_FLOAT32' as const,
      offset: 0,
      shape: [],
      content: f32([1, 1]),
    },
  ];

  it('a streamed push concatenates each table’s slices and applies them with the dense part', async () => {
    const { shard, service } = await withTable();
    const reply = await service.sendGradsStream(
      chunks(
        {
          context: ctx(1, 1),
          grads: denseW,
          sparse: [{ table: 'emb', ids: ids(4), grads: f32([1, 2]), counts: Buffer.alloc(0) }],
        },
        {
          context: null,
          grads: [],
          sparse: [
            { table: 'emb', ids: ids(5, 4), grads: f32([3, 4, 0.5, 0.5]), counts: Buffer.alloc(0) },
          ],
        },
      ),
      context(),
    );
    expect(reply.sparse).toEqual([
      { table: 'emb', rowsUpdated: 2, rowsCreated: 2, rowsRejected: 0 },
    ]);
    // Rows start at 1; id 4's two slices were summed.
    expect(await rows(service, 4, 5, 6)).toEqual([-0.5, -1.5, -2, -3, 1, 1]);
    expect(
      shard.tensors
        .get('w')!
        .content()
        .equals(f32([0, 1])),
    ).toBe(true);
    const listed = await service.listParams({ context: ctx() }, context());
    expect(listed.tables?.map((t) => t.name)).toEqual(['emb']);
    expect(service.getShardStatus().tables).toEqual([
      expect.objectContaining({ name: 'emb', rows: 2, step: 1, rowsCreated: 2, optimizer: 'sgd' }),
    ]);
  });

  it('a bad sparse part refuses the whole push: no tensor byte, no row, no mark changes', async () => {
    const { shard, service } = await withTable(2);
    const before = snapshot(shard);
    // An id of a bucket of shard 1.
    let other = 0;
    while (tableShardOf('emb', bucketOfBigInt(BigInt(other), 8), 2) === 0) other++;
    const bad = [
      [
        'PSERVER_WRONG_SHARD',
        { table: 'emb', ids: ids(other), grads: f32([1, 1]), counts: Buffer.alloc(0) },
      ],
      [
        'PSERVER_NON_FINITE_GRADIENT',
        { table: 'emb', ids: ids(1), grads: f32([NaN, 1]), counts: Buffer.alloc(0) },
      ],
      [
        'PSERVER_LENGTH_MISMATCH',
        { table: 'emb', ids: ids(1), grads: f32([1, 1]), counts: Buffer.alloc(3) },
      ],
      [
        'PSERVER_UNKNOWN_TENSOR',
        { table: 'nope', ids: ids(1), grads: f32([1, 1]), counts: Buffer.alloc(0) },
      ],
    ] as const;
    for (const [code, sparse] of bad) {
      await expect(
        service.sendGrads(
          {
            context: ctx(1, 1),
            grads: [tensor('w', 'ELEMENT_TYPE_FLOAT32', f32([1, 1]))],
            sparse: [sparse],
          },
          context(),
        ),
      ).rejects.toMatchObject({ code });
      expect(snapshot(shard)).toBe(before);
      expect(shard.tables.get('emb')!.table.rows).toBe(0);
      expect(shard.tables.get('emb')!.table.step).toBe(0);
    }
  });
});
