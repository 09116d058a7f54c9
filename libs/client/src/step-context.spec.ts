import { status } from '@grpc/grpc-js';
import {
  bucketOfBigInt,
  placeTensor,
  tableShards,
  type ParamSpec__Output,
  type RequestContext,
  type SparseGrad,
  type TableSpec__Output,
  type Tensor,
} from '@pserver/proto';
import { silentLogger } from '@pserver/logging';
import { RpcError } from '@pserver/rpc';
import { ClientError } from './errors';
import { fitsOneMessage, pushPieces, type ShardCalls } from './shard-calls';
import { StepContext } from './step-context';
import { StepPushes } from './step-pushes';
import { TableDirectory } from './tables';
import type { TensorSpec } from './tensors';
import type { View } from './view';

/** Shards held in memory: block name → bytes; every call recorded with its shard and context. */
class FakeShards {
  readonly blocks = new Map<string, Buffer>();
  /** What ListParams answers, by address. */
  readonly listing = new Map<string, ParamSpec__Output[]>();
  /** The tables ListParams answers, by address. */
  readonly tableListing = new Map<string, TableSpec__Output[]>();
  /** Rows by `table/id`; GetRows of another id reads `missingRow(id)`. */
  readonly rows = new Map<string, Float32Array>();
  /** Row width by table, for GetRows of missing ids. */
  readonly dims = new Map<string, number>();
  /** Every GetRows: its address and ids. */
  readonly rowReads: { address: string; ids: BigInt64Array }[] = [];
  /** Every push: its address, dense block names and row gradients. */
  readonly pushes: {
    address: string;
    context: RequestContext;
    names: string[];
    sparse: SparseGrad[];
    sampleCount: number | undefined;
  }[] = [];
  /** The last push's tensors, by block name. */
  readonly pushed = new Map<string, Tensor>();
  readonly calls: { method: string; address: string; context: RequestContext; names: string[] }[] =
    [];
  /** Errors the next calls throw, in order. */
  readonly failures: Error[] = [];
  /** What the next pushes answer, in order (then: applied). */
  readonly pushReplies: { outcome: string; version: number }[] = [];

  asCalls(): ShardCalls {
    return {
      getParams: async (address: string, context: RequestContext, names: string[]) => {
        this.record('getParams', address, context, names);
        return { params: names.map((name) => ({ name, content: this.blocks.get(name)! })) };
      },
      getRows: async (address: string, context: RequestContext, table: string, ids: Uint8Array) => {
        this.record('getRows', address, context, [table]);
        const list = new BigInt64Array(new Uint8Array(ids).buffer);
        this.rowReads.push({ address, ids: list });
        const dim = this.dims.get(table)!;
        const values = new Float32Array(list.length * dim);
        list.forEach((id, i) =>
          values.set(this.rows.get(`${table}/${id}`) ?? missingRow(id, dim), i * dim),
        );
        return { values: Buffer.from(values.buffer), found: Buffer.alloc(0) };
      },
      sendGrads: async (
        address: string,
        context: RequestContext,
        grads: Tensor[],
        _limits: unknown,
        sparse: SparseGrad[] = [],
        sampleCount?: number,
      ) => {
        this.record(
          'sendGrads',
          address,
          context,
          grads.map((g) => g.name!),
        );
        this.pushes.push({
          address,
          context,
          names: grads.map((g) => g.name!),
          sparse,
          sampleCount,
        });
        for (const g of grads) {
          this.blocks.set(g.name!, Buffer.from(g.content as Uint8Array));
          this.pushed.set(g.name!, g);
        }
        return this.pushReplies.shift() ?? { outcome: 'PUSH_OUTCOME_APPLIED', version: 1 };
      },
      listParams: async (address: string, context: RequestContext) => {
        this.record('listParams', address, context, []);
        return {
          shardEpoch: context.shardEpoch,
          params: this.listing.get(address) ?? [],
          tables: this.tableListing.get(address) ?? [],
        };
      },
    } as unknown as ShardCalls;
  }

  private record(method: string, address: string, context: RequestContext, names: string[]): void {
    const failure = this.failures.shift();
    this.calls.push({ method, address, context, names });
    if (failure) throw failure;
  }
}

/** What the fake reads for an id without a row: [id, −id, …] (small ids only). */
const missingRow = (id: bigint, dim: number): Float32Array =>
  Float32Array.from({ length: dim }, (_, e) => (e % 2 === 0 ? Number(id) : -Number(id)));

const view = (
  epochs: number[],
  blockSize = 4,
  consistency: View['consistency'] = 'async',
): View => ({
  shardCount: epochs.length,
  blockSize,
  shards: epochs.map((epoch, index) => ({ index, address: `ps-${index}:1`, epoch, serving: true })),
  revision: 1,
  initialized: true,
  consistency,
});

function setup(
  epochs = [3, 5, 8],
  specs: Record<string, TensorSpec> = {
    w: { elementType: 'ELEMENT_TYPE_FLOAT32', length: 10, shape: [10] },
  },
  timeoutMs = 60_000,
  blockSize = 4,
  consistency: View['consistency'] = 'async',
) {
  const shards = new FakeShards();
  const host = {
    calls: shards.asCalls(),
    live: view(epochs, blockSize),
    stale: [] as number[],
    globalClipNorm: undefined as number | undefined,
    testHooks: {},
    maxMessageBytes: 64 << 20,
    tables: new TableDirectory(),
    spec: (name: string): TensorSpec | undefined => specs[name],
    learnModel(model: ReadonlyMap<string, TensorSpec>) {
      for (const [name, spec] of model) specs[name] = spec;
    },
    liveView(): View {
      return this.live;
    },
    staleShard(index: number) {
      this.stale.push(index);
    },
    closedWithout: [] as number[],
    stepClosedWithout(closedSteps: number) {
      this.closedWithout.push(closedSteps);
    },
    lastStepPushes: undefined as StepPushes | undefined,
    logger: silentLogger,
  };
  const ctx = new StepContext(
    host,
    view(epochs, blockSize, consistency),
    { trainerId: 7, step: 42, pass: 2 },
    Date.now() + timeoutMs,
  );
  return { shards, host, ctx };
}

const unavailable = (): RpcError => new RpcError(status.UNAVAILABLE, undefined, 'reset', {});

describe('StepContext', () => {
  it('splits a tensor into blocks, pushes once per shard stamped with its view, and reads it back whole', async () => {
    const { shards, ctx } = setup();
    const w = Float32Array.from({ length: 10 }, (_, i) => i + 0.5);
    await ctx.sendGrads({ w });

    const placed = placeTensor('w', 10, 4, 3);
    const usedShards = new Set(placed.map((b) => b.shard));
    const pushes = shards.calls.filter((c) => c.method === 'sendGrads');
    expect(pushes).toHaveLength(usedShards.size);
    for (const push of pushes) {
      const shard = Number(push.address.slice(3, 4));
      expect(push.context).toEqual({
        trainerId: 7,
        pass: 2,
        step: 42,
        shardEpoch: [3, 5, 8][shard],
      });
      expect(push.names.sort()).toEqual(
        placed
          .filter((b) => b.shard === shard)
          .map((b) => b.name)
          .sort(),
      );
    }

    const back = await ctx.getParams(['w']);
    expect(back.w).toEqual(w);
  });

  it('under SYNC reports each shard’s outcome, and tells the shards it did not push to that its step is done', async () => {
    const w = { elementType: 'ELEMENT_TYPE_FLOAT32' as const, length: 2, shape: [2] };
    const { shards, ctx, host } = setup([3, 5, 8], { w }, 60_000, 4, 'sync');
    const home = placeTensor('w', 2, 4, 3)[0]!.shard;
    shards.pushReplies.push({ outcome: 'PUSH_OUTCOME_DROPPED_LATE', version: 42 });
    expect(await ctx.sendGrads({ w: new Float32Array(2) }, { sampleCount: 5 })).toEqual({
      shards: [{ shard: home, outcome: 'PUSH_OUTCOME_DROPPED_LATE', version: 42 }],
    });
    // The other shards have closed fewer steps (a shard restored behind the job answered late):
    // the trainer goes on at the first step one of them still waits for, not past it.
    shards.pushReplies.push(
      { outcome: 'PUSH_OUTCOME_ACCUMULATED', version: 40 },
      { outcome: 'PUSH_OUTCOME_ACCUMULATED', version: 41 },
    );
    expect(host.closedWithout).toEqual([]);
    await ctx.flush();
    expect(host.closedWithout).toEqual([40]);
    const rest = [0, 1, 2].filter((s) => s !== home).map((s) => `ps-${s}:1`);
    expect(shards.pushes.map((p) => [p.address, p.names, p.sampleCount])).toEqual([
      [`ps-${home}:1`, ['w'], 5],
      ...rest.map((address) => [address, [], 0]),
    ]);
  });

  describe('a SYNC shard that failed over without the last step', () => {
    const w = { elementType: 'ELEMENT_TYPE_FLOAT32' as const, length: 2, shape: [2] };
    const resendStep = (): RpcError =>
      new RpcError(status.FAILED_PRECONDITION, 'PSERVER_RESEND_STEP', 'send step 41 again', {});

    /** The context of step 42 (trainer 7, pass 2) after step 41 pushed `gradient` everywhere. */
    async function afterStep41(gradient: Float32Array, epochs = [3, 5, 8]) {
      const setupOf = setup(epochs, { w }, 60_000, 4, 'sync');
      const { shards, host } = setupOf;
      const last = new StepContext(
        host,
        view(epochs, 4, 'sync'),
        { trainerId: 7, step: 41, pass: 1 },
        Date.now() + 60_000,
      );
      await last.sendGrads({ w: gradient }, { sampleCount: 3 });
      await last.flush();
      host.lastStepPushes = last.sent;
      shards.pushes.length = 0;
      shards.calls.length = 0;
      return setupOf;
    }

    it('sends the kept push of step 41 again, bytes and identity as they were, then the read', async () => {
      const gradient = Float32Array.of(1.5, -2);
      const { shards, ctx } = await afterStep41(gradient);
      const home = placeTensor('w', 2, 4, 3)[0]!.shard;
      // The trainer reuses its array: what was sent was copied.
      gradient.fill(0);
      shards.failures.push(resendStep());
      await ctx.getParams(['w']);
      expect(shards.calls.map((c) => [c.method, c.address, c.context])).toEqual([
        [
          'getParams',
          `ps-${home}:1`,
          { trainerId: 7, pass: 2, step: 42, shardEpoch: [3, 5, 8][home] },
        ],
        [
          'sendGrads',
          `ps-${home}:1`,
          { trainerId: 7, pass: 1, step: 41, shardEpoch: [3, 5, 8][home] },
        ],
        [
          'getParams',
          `ps-${home}:1`,
          { trainerId: 7, pass: 2, step: 42, shardEpoch: [3, 5, 8][home] },
        ],
      ]);
      expect(shards.pushes.map((p) => [p.names, p.sampleCount])).toEqual([[['w'], 3]]);
      expect(new Float32Array(new Uint8Array(shards.blocks.get('w')!).buffer)).toEqual(
        Float32Array.of(1.5, -2),
      );
    });

    it('sends the zero-sample push of step 41 again where the step skipped, when a push asks', async () => {
      const { shards, ctx } = await afterStep41(Float32Array.of(1, 1));
      const home = placeTensor('w', 2, 4, 3)[0]!.shard;
      const other = [0, 1, 2].find((s) => s !== home)!;
      await ctx.sendGrads({ w: Float32Array.of(2, 2) });
      shards.failures.push(resendStep());
      shards.pushes.length = 0;
      await ctx.skip();
      const resent = shards.pushes.find((p) => p.context.step === 41)!;
      expect(resent).toMatchObject({ address: `ps-${other}:1`, names: [], sampleCount: 0 });
      expect(shards.pushes.filter((p) => p.context.step === 42)).toHaveLength(2);
    });

    it('says it took no part in step 41 with a zero-sample push when it kept nothing for it', async () => {
      const { shards, ctx, host } = await afterStep41(Float32Array.of(1, 1));
      // The pushes kept are another trainer id's (its session expired and it registered again).
      host.lastStepPushes = new StepPushes({ trainerId: 6, step: 41, pass: 1 }, 3);
      shards.failures.push(resendStep());
      await ctx.getParams(['w']);
      expect(shards.pushes.map((p) => [p.context, p.names, p.sampleCount])).toEqual([
        [expect.objectContaining({ trainerId: 7, pass: 2, step: 41 }), [], 0],
      ]);
    });

    it('asks once per call: a second request to send it again is the error it is', async () => {
      const { shards, ctx } = await afterStep41(Float32Array.of(1, 1));
      shards.failures.push(resendStep(), resendStep());
      await expect(ctx.getParams(['w'])).rejects.toMatchObject({ code: 'PSERVER_RESEND_STEP' });
    });
  });

  it('under ASYNC sends nothing more when the step ends', async () => {
    const { shards, ctx } = setup();
    await ctx.sendGrads({ w: new Float32Array(10) });
    const pushed = shards.pushes.length;
    await ctx.flush();
    expect(shards.pushes).toHaveLength(pushed);
    expect(shards.pushes.every((p) => p.sampleCount === undefined)).toBe(true);
  });

  it('retries a push whose outcome is unknown with the same step and context', async () => {
    const { shards, ctx } = setup([4]);
    shards.failures.push(
      unavailable(),
      new RpcError(status.DEADLINE_EXCEEDED, undefined, 'late', {}),
    );
    await ctx.sendGrads({ w: new Float32Array(10) });
    const pushes = shards.calls.filter((c) => c.method === 'sendGrads');
    expect(pushes).toHaveLength(3);
    expect(new Set(pushes.map((p) => JSON.stringify(p.context))).size).toBe(1);
  });

  it('waits out a busy pserver for the time it asks, then pushes', async () => {
    const { shards, ctx } = setup([4]);
    shards.failures.push(
      new RpcError(status.RESOURCE_EXHAUSTED, 'PSERVER_OVERLOADED', 'busy', { retryAfterMs: 30 }),
    );
    const started = performance.now();
    await ctx.sendGrads({ w: new Float32Array(10) });
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(shards.calls).toHaveLength(2);
  });

  it('waits for a shard that is not served yet or was fenced, and pushes once with the same context', async () => {
    const { shards, host, ctx } = setup([4]);
    shards.failures.push(
      new RpcError(status.UNAVAILABLE, 'PSERVER_NOT_SERVING', 'recovering it', {}),
      new RpcError(status.UNAVAILABLE, 'PSERVER_FENCED', 'fenced', {}),
      new RpcError(status.UNAVAILABLE, 'PSERVER_SHUTTING_DOWN', 'stopping', {}),
    );
    await ctx.sendGrads({ w: new Float32Array(10) });
    const pushes = shards.calls.filter((c) => c.method === 'sendGrads');
    expect(pushes).toHaveLength(4);
    expect(new Set(pushes.map((p) => JSON.stringify(p.context))).size).toBe(1);
    // Not a new view: the shard's epoch stands until the master says otherwise.
    expect(host.stale).toEqual([]);
  });

  it('ends the step as stale when a shard answers ABORTED, and reports the shard', async () => {
    const { shards, host, ctx } = setup([4]);
    shards.failures.push(
      new RpcError(status.ABORTED, 'PSERVER_STALE_EPOCH', 'epoch 4 < 5', { shardEpoch: 5 }),
    );
    await expect(ctx.sendGrads({ w: new Float32Array(10) })).rejects.toMatchObject({
      code: 'CLIENT_STALE_VIEW',
    });
    expect(host.stale).toEqual([0]);
    expect(shards.calls).toHaveLength(1);
  });

  it('sends nothing once the live view moved a shard the step captured', async () => {
    const { shards, host, ctx } = setup([4, 6]);
    host.live = view([4, 7]);
    await expect(ctx.sendGrads({ w: new Float32Array(10) })).rejects.toBeInstanceOf(ClientError);
    expect(shards.calls.filter((c) => c.address === 'ps-1:1')).toHaveLength(0);
  });

  it('cancels its retries when aborted, with a stale-view error', async () => {
    const { shards, ctx } = setup([4]);
    for (let i = 0; i < 100; i++) shards.failures.push(unavailable());
    const pushing = ctx.sendGrads({ w: new Float32Array(10) });
    setTimeout(() => ctx.abort(new ClientError('CLIENT_STALE_VIEW', 'shard 0 changed')), 50);
    await expect(pushing).rejects.toMatchObject({ code: 'CLIENT_STALE_VIEW' });
  });

  it('gives up at the step deadline, cancelling the retries', async () => {
    const { shards, ctx } = setup([4], undefined, 150);
    for (let i = 0; i < 1000; i++) shards.failures.push(unavailable());
    await expect(ctx.sendGrads({ w: new Float32Array(10) })).rejects.toMatchObject({
      code: 'CLIENT_DEADLINE_EXCEEDED',
    });
    ctx.close();
  });

  it('passes on an error that is neither stale nor retryable, as it came', async () => {
    const { shards, ctx } = setup([4]);
    const invalid = new RpcError(status.INVALID_ARGUMENT, 'PSERVER_INVALID_ARGUMENT', 'bad', {});
    shards.failures.push(invalid);
    await expect(ctx.sendGrads({ w: new Float32Array(10) })).rejects.toBe(invalid);
    expect(shards.calls).toHaveLength(1);
  });

  it('refuses to read a tensor as a typed array of another type', async () => {
    const { shards, ctx } = setup([4]);
    await expect(ctx.getParams(['w'], Float64Array)).rejects.toThrow(
      'tensor w: holds ELEMENT_TYPE_FLOAT32, not Float64Array',
    );
    expect(shards.calls).toHaveLength(0);
  });

  it('refuses a gradient whose element count differs from its tensor, naming both', async () => {
    const { shards, ctx } = setup([4]);
    const failure = await ctx.sendGrads({ w: new Float32Array(9) }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ClientError);
    expect(failure).toMatchObject({ code: 'CLIENT_SHAPE_MISMATCH' });
    expect((failure as Error).message).toBe('gradient w: expected shape [10], got 9 elements');
    expect(shards.calls).toHaveLength(0);
  });

  it('refuses a gradient of a transposed shape, naming the tensor, expected and actual', async () => {
    const specs: Record<string, TensorSpec> = {
      m: { elementType: 'ELEMENT_TYPE_FLOAT32', length: 6, shape: [2, 3] },
    };
    const { shards, ctx } = setup([4], specs);
    const values = new Float32Array(6);
    await expect(ctx.sendGrads({ m: { values, shape: [3, 2] } })).rejects.toMatchObject({
      code: 'CLIENT_SHAPE_MISMATCH',
      message: 'gradient m: expected shape [2, 3], got shape [3, 2]',
    });
    await expect(ctx.sendGrads({ m: new Float64Array(6) })).rejects.toMatchObject({
      code: 'CLIENT_SHAPE_MISMATCH',
      message: 'gradient m: expected ELEMENT_TYPE_FLOAT32, got ELEMENT_TYPE_FLOAT64',
    });
    expect(shards.calls).toHaveLength(0);
  });

  it("sends the tensor's shape on every block, given as { values, shape } or not", async () => {
    const specs: Record<string, TensorSpec> = {
      m: { elementType: 'ELEMENT_TYPE_FLOAT32', length: 6, shape: [2, 3] },
      flat: { elementType: 'ELEMENT_TYPE_FLOAT32', length: 2, shape: [] },
    };
    const { shards, ctx } = setup([4, 6], specs);
    await ctx.sendGrads({ m: { values: new Float32Array(6), shape: [2, 3] } });
    expect([...shards.pushed.keys()].sort()).toEqual(['m@0', 'm@1']);
    for (const block of shards.pushed.values()) expect(block.shape).toEqual([2, 3]);
    await ctx.sendGrads({
      m: new Float32Array(6),
      flat: { values: Float32Array.of(1, 2), shape: [2] },
    });
    expect(shards.pushed.get('m@1')!.shape).toEqual([2, 3]);
    expect(shards.pushed.get('flat')!.shape).toEqual([]);
  });

  it("splits one shard's pull into calls whose replies stay under half the message limit", async () => {
    const specs: Record<string, TensorSpec> = {
      big: { elementType: 'ELEMENT_TYPE_FLOAT32', length: 64, shape: [] },
    };
    const { shards, host, ctx } = setup([4], specs);
    const values = Float32Array.from({ length: 64 }, (_, i) => i);
    for (const block of placeTensor('big', 64, 4, 1))
      shards.blocks.set(block.name, Buffer.from(values.slice(block.start, block.end).buffer));
    // Each block's entry costs 16 bytes of content plus its name and 64 bytes; a reply 1 KiB.
    host.maxMessageBytes = 2 * (1024 + 3 * (16 + 64 + 6));
    const { big } = await ctx.getParams(['big'], Float32Array);
    expect(big).toEqual(values);
    const pulls = shards.calls.filter((c) => c.method === 'getParams');
    expect(pulls.length).toBeGreaterThanOrEqual(6);
    for (const pull of pulls) expect(pull.names.length).toBeLessThanOrEqual(3);
    expect(pulls.flatMap((p) => p.names)).toEqual(placeTensor('big', 64, 4, 1).map((b) => b.name));
  });

  it('refuses at once to pull a block larger than the message limit', async () => {
    const specs: Record<string, TensorSpec> = {
      huge: { elementType: 'ELEMENT_TYPE_FLOAT32', length: 1_000, shape: [] },
    };
    // One block of 4000 bytes; the limit is 2 KiB.
    const { shards, host, ctx } = setup([4], specs, 60_000, 1_000);
    host.maxMessageBytes = 2_048;
    await expect(ctx.getParams(['huge'])).rejects.toMatchObject({
      code: 'CLIENT_MESSAGE_TOO_LARGE',
    });
    expect(shards.calls).toHaveLength(0);
  });

  it("raises gRPC's own RESOURCE_EXHAUSTED (a message over the limit) at once, not retried", async () => {
    const { shards, ctx } = setup([4]);
    shards.failures.push(
      new RpcError(status.RESOURCE_EXHAUSTED, undefined, 'Received message larger than max', {}),
    );
    const started = performance.now();
    const failure = await ctx.sendGrads({ w: new Float32Array(10) }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ClientError);
    expect(failure).toMatchObject({ code: 'CLIENT_MESSAGE_TOO_LARGE' });
    expect(shards.calls).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('lists the model on every shard before reading a tensor it does not know', async () => {
    const specs: Record<string, TensorSpec> = {};
    const { shards, ctx } = setup([4, 6], specs);
    const w = Float32Array.from({ length: 10 }, (_, i) => i);
    const blocks = placeTensor('w', 10, 4, 2);
    for (const block of blocks) {
      shards.blocks.set(block.name, Buffer.from(w.slice(block.start, block.end).buffer));
      const address = `ps-${block.shard}:1`;
      shards.listing.set(address, [
        ...(shards.listing.get(address) ?? []),
        {
          name: block.name,
          elementType: 'ELEMENT_TYPE_FLOAT32',
          shape: [2, 5],
          elements: block.end - block.start,
          optimizer: null,
        },
      ]);
    }
    const listed = await ctx.listParams();
    expect(listed.get('w')).toEqual({
      elementType: 'ELEMENT_TYPE_FLOAT32',
      shape: [2, 5],
      length: 10,
      optimizer: null,
    });
    delete specs.w;
    shards.calls.length = 0;
    const { w: read } = await ctx.getParams(['w'], Float32Array);
    expect(read).toEqual(w);
    expect(shards.calls.filter((c) => c.method === 'listParams')).toHaveLength(2);
    await expect(ctx.getParams(['nobody'])).rejects.toMatchObject({
      code: 'CLIENT_UNKNOWN_TENSOR',
    });
  });

  it('clips all float gradients together by their global L2 norm before the split', async () => {
    const specs: Record<string, TensorSpec> = {
      a: { elementType: 'ELEMENT_TYPE_FLOAT64', length: 1, shape: [] },
      b: { elementType: 'ELEMENT_TYPE_FLOAT64', length: 1, shape: [] },
    };
    const { shards, host, ctx } = setup([4], specs);
    host.globalClipNorm = 1;
    await ctx.sendGrads({ a: Float64Array.of(3), b: Float64Array.of(4) });
    const read = (name: string): number =>
      new Float64Array(new Uint8Array(shards.blocks.get(name)!).buffer)[0]!;
    expect(read('a')).toBeCloseTo(0.6, 12);
    expect(read('b')).toBeCloseTo(0.8, 12);
  });
});

describe('StepContext tables', () => {
  const emb = { name: 'emb', dim: 2, buckets: 64 };

  function withTable(epochs = [3, 5, 8], maxMessageBytes = 64 << 20) {
    const env = setup(epochs);
    env.host.tables.declare(emb);
    env.host.maxMessageBytes = maxMessageBytes;
    env.shards.dims.set('emb', emb.dim);
    return env;
  }

  const shardOfAddress = (address: string): number =>
    Number(address.slice(3, address.indexOf(':')));
  const idsOf = (bytes: SparseGrad['ids']): BigInt64Array =>
    new BigInt64Array(new Uint8Array(bytes as Uint8Array).buffer);
  const floatsOf = (bytes: SparseGrad['grads']): Float32Array =>
    new Float32Array(new Uint8Array(bytes as Uint8Array).buffer);
  const countsOf = (bytes: SparseGrad['counts']): Uint32Array =>
    new Uint32Array(new Uint8Array(bytes as Uint8Array).buffer);

  it('reads each distinct id once, from the shard tableShards places its bucket on, and scatters rows in request order', async () => {
    const { shards, ctx } = withTable();
    const ids = BigInt64Array.from([5n, -1n, 5n, 2n ** 53n + 1n, -1n, 0n, 9n, 5n]);
    shards.rows.set('emb/5', Float32Array.from([0.5, 1.5]));
    shards.rows.set(`emb/${2n ** 53n + 1n}`, Float32Array.from([7, 8]));

    const rows = await ctx.lookup('emb', ids);

    const route = tableShards('emb', 64, 3);
    const read = shards.rowReads.flatMap((r) => [...r.ids]);
    expect([...read].sort()).toEqual([5n, -1n, 2n ** 53n + 1n, 0n, 9n].sort());
    for (const { address, ids: sent } of shards.rowReads)
      for (const id of sent) expect(route[bucketOfBigInt(id, 64)]).toBe(shardOfAddress(address));
    // One GetRows per shard, stamped with that shard's epoch.
    const addresses = shards.rowReads.map((r) => r.address);
    expect(new Set(addresses).size).toBe(addresses.length);
    for (const call of shards.calls.filter((c) => c.method === 'getRows'))
      expect(call.context.shardEpoch).toBe([3, 5, 8][shardOfAddress(call.address)]);
    const expected = [
      [0.5, 1.5],
      [-1, 1],
      [0.5, 1.5],
      [7, 8],
      [-1, 1],
      [0, -0],
      [9, -9],
      [0.5, 1.5],
    ].flat();
    expect([...rows]).toEqual(expected);
  });

  it("splits one shard's rows into GetRows calls under half the message limit, order kept", async () => {
    // dim 2: 9 bytes a row; (4096 / 2 − 1024) / 9 = 113 rows a call.
    const { shards, ctx } = withTable([3], 4096);
    const ids = BigInt64Array.from({ length: 1000 }, (_, i) => BigInt(999 - i));
    const rows = await ctx.lookup('emb', ids);
    expect(shards.rowReads.map((r) => r.ids.length)).toEqual([...Array(8).fill(113), 96]);
    for (let i = 0; i < ids.length; i++)
      expect([rows[2 * i], rows[2 * i + 1]]).toEqual([999 - i, -(999 - i)]);
  });

  it('merges duplicate ids in order of first appearance, in float32 sums, with their counts', async () => {
    const { shards, ctx } = withTable([3]);
    await ctx.pushRows(
      'emb',
      BigInt64Array.from([7n, 3n, 7n]),
      Float32Array.from([0.1, 0.2, 1, 1, 0.3, 0.4]),
      Uint32Array.from([1, 2, 3]),
    );
    await ctx.pushRows(
      'emb',
      BigInt64Array.from([7n]),
      Float32Array.from([1e8, 1]),
      Uint32Array.of(4),
    );
    await ctx.flush();

    expect(shards.pushes).toHaveLength(1);
    const [grad] = shards.pushes[0]!.sparse;
    expect(grad!.table).toBe('emb');
    expect([...idsOf(grad!.ids)]).toEqual([7n, 3n]);
    const f = Math.fround;
    expect([...floatsOf(grad!.grads)]).toEqual([
      f(f(f(0.1) + f(0.3)) + f(1e8)),
      f(f(f(0.2) + f(0.4)) + 1),
      1,
      1,
    ]);
    expect([...countsOf(grad!.counts)]).toEqual([8, 2]);
  });

  it("sends each shard one push carrying both its dense blocks and its tables' rows", async () => {
    const { shards, ctx } = withTable();
    const ids = BigInt64Array.from({ length: 64 }, (_, i) => BigInt(i * 1_000_003));
    const grads = Float32Array.from({ length: 128 }, (_, i) => i);
    await ctx.pushRows('emb', ids, grads);
    await ctx.sendGrads({ w: new Float32Array(10).fill(1) });
    await ctx.flush(); // what runStep does after the step function: nothing more to send

    const route = tableShards('emb', 64, 3);
    const denseShards = new Set(placeTensor('w', 10, 4, 3).map((b) => b.shard));
    const rowShards = new Set([...ids].map((id) => route[bucketOfBigInt(id, 64)]!));
    const expectedShards = new Set([...denseShards, ...rowShards]);
    expect(shards.pushes.map((p) => shardOfAddress(p.address)).sort()).toEqual(
      [...expectedShards].sort(),
    );
    const sent = new Map<bigint, number[]>();
    for (const push of shards.pushes) {
      const shard = shardOfAddress(push.address);
      expect(push.names.length > 0).toBe(denseShards.has(shard));
      expect(push.sparse.length).toBe(rowShards.has(shard) ? 1 : 0);
      for (const grad of push.sparse) {
        const shardIds = idsOf(grad.ids);
        const values = floatsOf(grad.grads);
        shardIds.forEach((id, j) => {
          expect(route[bucketOfBigInt(id, 64)]).toBe(shard);
          sent.set(id, [values[2 * j]!, values[2 * j + 1]!]);
        });
      }
    }
    ids.forEach((id, i) => expect(sent.get(id)).toEqual([2 * i, 2 * i + 1]));
  });

  it('refuses to skip with rows staged and not sent, sending nothing', async () => {
    const { shards, ctx } = withTable();
    await ctx.pushRows('emb', BigInt64Array.of(1n, 2n), new Float32Array(4));
    await expect(ctx.skip()).rejects.toMatchObject({
      code: 'CLIENT_STEP_FAILED',
      message: expect.stringContaining('pushRows'),
    });
    expect(shards.calls).toHaveLength(0);
  });

  it('refuses rows whose lengths do not fit the table, sending nothing', async () => {
    const { shards, ctx } = withTable();
    const ids = BigInt64Array.from([1n, 2n]);
    await expect(ctx.pushRows('emb', ids, new Float32Array(3))).rejects.toMatchObject({
      code: 'CLIENT_SHAPE_MISMATCH',
      message: 'rows of table emb: expected 2 ids × dim 2 = 4 values, got 3',
    });
    await expect(
      ctx.pushRows('emb', ids, new Float32Array(4), new Uint32Array(3)),
    ).rejects.toMatchObject({ code: 'CLIENT_SHAPE_MISMATCH' });
    await ctx.flush();
    expect(shards.calls).toHaveLength(0);
  });

  it("refuses rows after the step's push went out (they would be a duplicate push)", async () => {
    const { shards, ctx } = withTable();
    await ctx.sendGrads({ w: new Float32Array(10) });
    const pushed = shards.pushes.length;
    await expect(
      ctx.pushRows('emb', BigInt64Array.of(1n), new Float32Array(2)),
    ).rejects.toBeInstanceOf(ClientError);
    await ctx.flush();
    expect(shards.pushes).toHaveLength(pushed);
  });

  it('learns a table it does not know from the listing, then reads it', async () => {
    const { shards, host, ctx } = setup([3, 5]);
    shards.dims.set('emb', 3);
    shards.tableListing.set('ps-1:1', [{ name: 'emb', dim: 3, buckets: 16 } as TableSpec__Output]);
    const rows = await ctx.lookup('emb', BigInt64Array.of(4n));
    expect(host.tables.get('emb')).toEqual({ name: 'emb', dim: 3, buckets: 16 });
    expect([...rows]).toEqual([4, -4, 4]);
    await expect(ctx.lookup('other', BigInt64Array.of(4n))).rejects.toMatchObject({
      code: 'CLIENT_UNKNOWN_TENSOR',
    });
  });
});

describe('a push above the message limit', () => {
  const context = { trainerId: 7, step: 1, pass: 0, shardEpoch: 3 };
  const n = 1000;
  const rows: SparseGrad = {
    table: 'emb',
    ids: Buffer.from(BigInt64Array.from({ length: n }, (_, i) => BigInt(i)).buffer),
    grads: Buffer.from(Float32Array.from({ length: n * 4 }, (_, i) => i).buffer),
    counts: Buffer.from(Uint32Array.from({ length: n }, (_, i) => i + 1).buffer),
  };
  const dense: Tensor = {
    name: 'w@0',
    elementType: 'ELEMENT_TYPE_FLOAT32',
    shape: [100],
    content: Buffer.alloc(400),
  };

  it('is streamed, its rows in slices of whole rows that add up to the rows', () => {
    // 8 + 16 + 4 = 28 bytes a row: a 1 KiB piece holds 36 rows.
    expect(fitsOneMessage([dense], [rows], 64 << 10)).toBe(true);
    expect(fitsOneMessage([dense], [rows], 16 << 10)).toBe(false);
    const pieces = [...pushPieces(context, [dense], [rows], 1024)];
    expect(pieces[0]!.context).toEqual(context);
    expect(pieces.slice(1).every((p) => p.context === undefined)).toBe(true);
    const slices = pieces.flatMap((p) => p.sparse ?? []);
    expect(slices.map((s) => (s.ids as Uint8Array).byteLength / 8)).toEqual([
      ...Array(27).fill(36),
      28,
    ]);
    for (const s of slices) {
      const count = (s.ids as Uint8Array).byteLength / 8;
      expect((s.grads as Uint8Array).byteLength).toBe(count * 16);
      expect((s.counts as Uint8Array).byteLength).toBe(count * 4);
    }
    const join = (part: 'ids' | 'grads' | 'counts'): Buffer =>
      Buffer.concat(slices.map((s) => s[part] as Uint8Array));
    expect(join('ids').equals(rows.ids as Buffer)).toBe(true);
    expect(join('grads').equals(rows.grads as Buffer)).toBe(true);
    expect(join('counts').equals(rows.counts as Buffer)).toBe(true);
  });
});
