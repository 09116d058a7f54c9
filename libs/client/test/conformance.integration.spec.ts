import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import {
  bucketOfBigInt,
  placeTensor,
  tableShards,
  type ElementTypeName,
  type OptimizerConfig,
  type TableSpec,
} from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import {
  bytesOf,
  LocalCluster,
  MasterDriver,
  PserverDriver,
  stopAllProcesses,
  scenarioCoverage,
  scenarioNames,
  waitFor,
  workspaceRoot,
} from '@pserver/testing';
import { connect, type PserverClient, type PushReport, type TensorArray } from '../src';
import { BFloat16Bits, Float16Bits } from '../src/tensors';

// The conformance scenarios every client runs (proto/testdata/conformance/README.md), here for
// the TypeScript client; clients/python and clients/go run the same file.
const conformance = path.join(workspaceRoot(), 'proto', 'testdata', 'conformance');
const scenarios = JSON.parse(fs.readFileSync(path.join(conformance, 'scenarios.json'), 'utf8'));
const placement = JSON.parse(
  fs.readFileSync(path.join(workspaceRoot(), scenarios.placement.vectors), 'utf8'),
);
const { pservers, spares, masters, blockSize } = scenarios.cluster;

const fromHex = (hex: string): Buffer => Buffer.from(hex, 'hex');
const float32s = (values: number[]): Float32Array => Float32Array.from(values);
// A copy of the bytes in a fresh, aligned buffer.
const own = (b: Buffer): ArrayBuffer => new Uint8Array(b).buffer;
const arrays: Record<string, (bytes: Buffer) => TensorArray> = {
  ELEMENT_TYPE_INT32: (b) => new Int32Array(own(b)),
  ELEMENT_TYPE_UINT32: (b) => new Uint32Array(own(b)),
  ELEMENT_TYPE_INT64: (b) => new BigInt64Array(own(b)),
  ELEMENT_TYPE_UINT64: (b) => new BigUint64Array(own(b)),
  ELEMENT_TYPE_FLOAT32: (b) => new Float32Array(own(b)),
  ELEMENT_TYPE_FLOAT64: (b) => new Float64Array(own(b)),
  ELEMENT_TYPE_FLOAT16: (b) => new Float16Bits(own(b)),
  ELEMENT_TYPE_BFLOAT16: (b) => new BFloat16Bits(own(b)),
};

interface BadCase {
  name: string;
  rpc: 'SendGrads' | 'GetParams' | 'SetDataset' | 'InitParam';
  to: string;
  grad?: { name: string; elementType: string; shape?: number[]; contentHex: string };
  param?: { name: string; elementType: string; shape: number[]; contentHex: string };
  optimizer?: OptimizerConfig;
  names?: string[];
  request?: object;
  code: string;
  errorCode: string;
}

/** A cluster of the scenarios' shape for one scenario, and the clients it hands out. */
function clusterPerScenario(): {
  cluster: () => LocalCluster;
  trainer: (name?: string) => Promise<PserverClient>;
} {
  let cluster: LocalCluster | undefined;
  const clients: PserverClient[] = [];
  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers,
      spares,
      masters,
      blockSize,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 4,
    });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await cluster?.stop();
  });
  return {
    cluster: () => cluster!,
    trainer: async (name) => {
      const client = await connect({ master: cluster!.masterAddresses, name });
      clients.push(client);
      return client;
    },
  };
}

const ownerOf = (cluster: LocalCluster, tensor: string, elements = 1): PserverDriver =>
  new PserverDriver(
    cluster.serving().get(placeTensor(tensor, elements, blockSize, pservers)[0]!.shard)!.pserver
      .address,
  );

afterAll(() => stopAllProcesses());

/** The scenarios this suite runs: `scenario` records each as Jest collects it, before any test. */
const run: string[] = [];

/** The tests of the scenario `name` of scenarios.json, under `conformance: <title>`. */
function scenario(name: string, title: string, tests: () => void): void {
  run.push(name);
  describe(`conformance: ${title}`, tests);
}

describe('conformance: the scenarios file', () => {
  it('runs every scenario scenarios.json lists, and none it does not list', () => {
    expect(scenarioCoverage(scenarioNames(scenarios), run)).toEqual({ notRun: [], unlisted: [] });
  });
});

scenario('placement', 'placement', () => {
  it('splits and places every vector as proto/testdata/placement.json says', () => {
    for (const vector of placement.placement) {
      expect(placeTensor(vector.name, vector.elements, vector.block_size, vector.shards)).toEqual(
        vector.blocks,
      );
    }
  });
});

scenario('roundTrip', 'round trip of every element type', () => {
  const { trainer } = clusterPerScenario();

  it('reads back exactly the bytes it initialized, blocks spread over the shards', async () => {
    const client = await trainer();
    const tensors = scenarios.roundTrip.tensors as {
      name: string;
      elementType: string;
      contentHex: string;
    }[];
    // Integer and 16-bit float tensors are stored, with no optimizer; float32 and float64 ones
    // need a learning rate for plain SGD (it has no default). No update is pushed here.
    const optimized = (type: string): boolean =>
      type === 'ELEMENT_TYPE_FLOAT32' || type === 'ELEMENT_TYPE_FLOAT64';
    await client.initParams(
      Object.fromEntries(
        tensors.map((t) => [t.name, arrays[t.elementType]!(fromHex(t.contentHex))]),
      ),
      Object.fromEntries(
        tensors.map((t) => [
          t.name,
          optimized(t.elementType) ? { sgd: {}, learningRate: { base: 1 } } : {},
        ]),
      ),
    );
    const read = await client.getParams(tensors.map((t) => t.name));
    for (const t of tensors) {
      expect(read[t.name]!.constructor).toBe(
        arrays[t.elementType]!(fromHex(t.contentHex)).constructor,
      );
      expect(bytesOf(read[t.name]!).toString('hex')).toBe(t.contentHex);
    }
  });
});

scenario('initElection', 'init election', () => {
  const { trainer } = clusterPerScenario();

  it('lets one of several concurrent trainers initialize, and all read its values', async () => {
    const { trainers, tensor } = scenarios.initElection;
    const clients = await Promise.all(
      Array.from({ length: trainers }, (_, k) => trainer(`elect-${k}`)),
    );
    await Promise.all(
      clients.map((client, k) =>
        client.initParams(
          { [tensor.name]: new Float32Array(tensor.length).fill(k + 1) },
          { sgd: {}, learningRate: { base: 1 } },
        ),
      ),
    );
    const seen = await Promise.all(
      clients.map(async (c) => [...(await c.getParams([tensor.name], Float32Array))[tensor.name]!]),
    );
    const proposals = clients.map((_, k) => new Array<number>(tensor.length).fill(k + 1));
    expect(proposals).toContainEqual(seen[0]);
    for (const values of seen) expect(values).toEqual(seen[0]);
  });
});

scenario('staleEpoch', 'a stale shard epoch re-runs the step', () => {
  const { cluster, trainer } = clusterPerScenario();

  it('runs the step again on the restored parameters, never applying the stale push', async () => {
    const { tensor, optimizer, gradient, expect: expected } = scenarios.staleEpoch;
    const client = await trainer();
    await client.initParams({ [tensor.name]: new Float32Array(tensor.length) }, optimizer);
    const push = (): Promise<PushReport> =>
      client.step((ctx) => ctx.sendGrads({ [tensor.name]: float32s(gradient) }));
    await push();
    const owner = ownerOf(cluster(), tensor.name, tensor.length);
    await owner.saveCheckpoint().finally(() => owner.close());
    await push();

    const shard = placeTensor(tensor.name, tensor.length, blockSize, pservers)[0]!.shard;
    const pulled: number[][] = [];
    await client.step(async (ctx) => {
      const values = (await ctx.getParams([tensor.name], Float32Array))[tensor.name]!;
      pulled.push([...values]);
      if (pulled.length === 1) {
        const before = cluster().serving().get(shard)!;
        await before.pserver.process.kill();
        await waitFor(
          () => (cluster().serving().get(shard)?.epoch ?? 0) > before.epoch || undefined,
          {
            timeoutMs: 30_000,
            description: `a spare serves shard ${shard}`,
          },
        );
      }
      await ctx.sendGrads({ [tensor.name]: float32s(gradient) });
    });
    expect(pulled).toHaveLength(expected.runsOfStep3);
    expect(pulled).toEqual([expected.pulledInRun1, expected.pulledInRun2]);
    expect([...(await client.getParams([tensor.name], Float32Array))[tensor.name]!]).toEqual(
      expected.final,
    );
  });
});

scenario('duplicatePush', 'a duplicate push is not applied again', () => {
  const { cluster, trainer } = clusterPerScenario();

  it('acknowledges the second send of one step as a duplicate', async () => {
    const { tensor, optimizer, gradient, expect: expected } = scenarios.duplicatePush;
    const client = await trainer();
    await client.initParams({ [tensor.name]: new Float32Array(tensor.length) }, optimizer);
    const owner = ownerOf(cluster(), tensor.name, tensor.length);
    try {
      const context = { trainerId: client.trainerId, step: 1, shardEpoch: await owner.epoch() };
      const grad = {
        name: tensor.name,
        elementType: tensor.elementType,
        content: bytesOf(float32s(gradient)),
      };
      const outcomes = [
        (await owner.sendGrads(context, [grad])).outcome,
        (await owner.sendGrads(context, [grad])).outcome,
      ];
      expect(outcomes).toEqual(expected.outcomes);
    } finally {
      owner.close();
    }
    expect([...(await client.getParams([tensor.name], Float32Array))[tensor.name]!]).toEqual(
      expected.final,
    );
  });
});

scenario('tasks', 'dataset task statuses', () => {
  const { cluster, trainer } = clusterPerScenario();

  it('answers wait, task, pass over in the documented order, and the client loop ends the pass', async () => {
    const { dataset, sequence } = scenarios.tasks;
    const client = await trainer();
    await client.setDataset(dataset);
    const master = new MasterDriver(cluster().masterAddresses[0]!);
    const taken: { id: number; dispatch: number }[] = [];
    let lastTask: { id: number; dispatch: number } | undefined;
    try {
      for (const item of sequence) {
        if (item.getTask) {
          const reply = await master.getTask(client.trainerId, item.getTask.pass);
          expect(reply.outcome).toBe(item.outcome);
          lastTask = reply.task ? { id: reply.task.id, dispatch: reply.task.dispatch } : undefined;
        } else if (item.take) {
          for (let i = 0; i < item.take; i++) {
            const reply = await master.getTask(client.trainerId, item.pass);
            expect(reply.outcome).toBe('GET_TASK_OUTCOME_TASK');
            taken.push({ id: reply.task!.id, dispatch: reply.task!.dispatch });
          }
          expect(taken.map((t) => t.id).sort()).toEqual([0, 1, 2, 3]);
        } else if (item.finishAll) {
          for (const task of taken.splice(0)) await master.taskFinished(client.trainerId, task);
        }
        if (item.outcome === 'GET_TASK_OUTCOME_TASK') taken.push(lastTask!);
      }
      // The sequence ends holding a task of pass 1: done with it, the client's loop gets the others.
      for (const task of taken.splice(0)) await master.taskFinished(client.trainerId, task);
    } finally {
      master.close();
    }
    const ids: number[] = [];
    for await (const task of client.tasks(1)) ids.push(task.id);
    expect(ids).toHaveLength(3);
    const pass2: number[] = [];
    for await (const task of client.tasks(2)) pass2.push(task.id);
    expect(pass2.sort()).toEqual([0, 1, 2, 3]);
  });
});

scenario('badInput', 'bad input', () => {
  const { cluster, trainer } = clusterPerScenario();

  it.each((scenarios.badInput.cases as BadCase[]).map((c) => [c.name, c] as const))(
    '%s: the documented status, and nothing changes',
    async (_name, c) => {
      const { setup } = scenarios.badInput;
      const client = await trainer();
      await client.initParams(
        { [setup.tensor.name]: { values: float32s(setup.values), shape: setup.tensor.shape } },
        setup.optimizer,
      );
      const call = async (): Promise<unknown> => {
        if (c.rpc === 'SetDataset') return client.setDataset(c.request!);
        const owner = ownerOf(
          cluster(),
          c.to,
          c.to === setup.tensor.name ? setup.tensor.length : 1,
        );
        try {
          const context = { trainerId: client.trainerId, step: 1, shardEpoch: await owner.epoch() };
          if (c.rpc === 'GetParams') return await owner.getParams(context, c.names!);
          if (c.rpc === 'InitParam') {
            const param = c.param!;
            return await owner.initParam(
              { shardEpoch: context.shardEpoch },
              {
                name: param.name,
                elementType: param.elementType as ElementTypeName,
                shape: param.shape,
                content: fromHex(param.contentHex),
              },
              c.optimizer,
            );
          }
          const grad = c.grad!;
          return await owner.sendGrads(context, [
            {
              name: grad.name,
              elementType: grad.elementType as ElementTypeName,
              shape: grad.shape ?? [],
              content: fromHex(grad.contentHex),
            },
          ]);
        } finally {
          owner.close();
        }
      };
      const failure = await call().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(RpcError);
      expect(failure).toMatchObject({ status: expect.anything(), code: c.errorCode });
      expect(status[(failure as RpcError).status]).toBe(c.code);
      const { [setup.tensor.name]: values } = await client.getParams(
        [setup.tensor.name],
        Float32Array,
      );
      expect([...values!]).toEqual(setup.values);
    },
  );
});

scenario('defaultLearningRate', 'default learning rate', () => {
  const { trainer } = clusterPerScenario();

  it("applies Adam's unset learning rate as PyTorch's 1e-3, and lists it filled in", async () => {
    const { tensor, values, optimizer, gradient, expect: expected } = scenarios.defaultLearningRate;
    const client = await trainer();
    await client.initParams(
      { [tensor.name]: { values: float32s(values), shape: tensor.shape } },
      optimizer,
    );
    await client.step((ctx) => ctx.sendGrads({ [tensor.name]: float32s(gradient) }));
    const after = (await client.getParams([tensor.name], Float32Array))[tensor.name]!;
    for (const x of after)
      expect(Math.abs(x - expected.after)).toBeLessThanOrEqual(expected.tolerance);
    const listed = await client.listParams();
    expect(listed[tensor.name]!.optimizer?.learningRate?.base).toBeCloseTo(
      expected.listedLearningRate,
      12,
    );
  });
});

scenario('attach', 'attach without initializing', () => {
  const { trainer } = clusterPerScenario();

  it('lists the model and reads every tensor by name in a client that never initialized', async () => {
    const {
      tensors,
      optimizer,
      expect: expected,
    } = scenarios.attach as {
      tensors: { name: string; elementType: string; shape: number[]; values: number[] }[];
      optimizer: OptimizerConfig;
      expect: {
        listed: Record<string, { elementType: string; shape: number[]; learningRate: number }>;
      };
    };
    const typed = (t: (typeof tensors)[number]): TensorArray =>
      t.elementType === 'ELEMENT_TYPE_FLOAT64' ? Float64Array.from(t.values) : float32s(t.values);
    const initializer = await trainer('attach-initializer');
    await initializer.initParams(
      Object.fromEntries(tensors.map((t) => [t.name, { values: typed(t), shape: t.shape }])),
      optimizer,
    );

    const reader = await trainer('attach-reader');
    const listed = await reader.listParams();
    expect(Object.keys(listed).sort()).toEqual(Object.keys(expected.listed).sort());
    for (const [name, want] of Object.entries(expected.listed)) {
      expect(listed[name]).toMatchObject({ elementType: want.elementType, shape: want.shape });
      expect(listed[name]!.optimizer?.learningRate?.base).toBe(want.learningRate);
    }
    const fresh = await trainer('attach-evaluator');
    const read = await fresh.getParams(tensors.map((t) => t.name));
    for (const t of tensors) expect(read[t.name]).toEqual(typed(t));
  });
});

scenario('tables', 'sparse tables', () => {
  const { cluster, trainer } = clusterPerScenario();

  it('reads init values, merges duplicate ids, admits at the threshold, and refuses bad pushes whole', async () => {
    const { tables, probe, push, gatedPush, badPushes, expect: expected } = scenarios.tables;
    const ids = (values: string[]): BigInt64Array => BigInt64Array.from(values.map(BigInt));
    const rows = (grads: number[][]): Float32Array => Float32Array.from(grads.flat());
    const hex = (values: Float32Array): string => bytesOf(values).toString('hex');
    const client = await trainer();
    await client.initParams(
      {},
      {},
      { tables: tables as (TableSpec & { name: string; dim: number })[] },
    );
    const emb = tables[0].name as string;
    const gated = tables[1].name as string;

    expect(
      hex(
        await client.step(async (ctx) => {
          const read = await ctx.lookup(emb, ids(probe));
          await ctx.pushRows(push.table, ids(push.ids), rows(push.grads));
          return read;
        }),
      ),
    ).toBe(expected.initHex);
    expect(hex(await client.step((ctx) => ctx.lookup(emb, ids(probe))))).toBe(expected.afterHex);
    for (const after of expected.gatedAfter as number[][]) {
      const read = await client
        .step(async (ctx) => {
          await ctx.pushRows(gatedPush.table, ids(gatedPush.ids), rows(gatedPush.grads));
          return undefined;
        })
        .then(() => client.step((ctx) => ctx.lookup(gated, ids(gatedPush.ids))));
      expect([...read]).toEqual(after);
    }

    const shard = tableShards(emb, tables[0].buckets, pservers)[
      bucketOfBigInt(5n, tables[0].buckets)
    ]!;
    const owner = new PserverDriver(cluster().serving().get(shard)!.pserver.address);
    try {
      for (const bad of badPushes) {
        const context = {
          trainerId: client.trainerId,
          step: 1000,
          shardEpoch: await owner.epoch(),
        };
        const failure = await owner
          .sendGrads(
            context,
            [],
            [
              {
                table: bad.sparse.table,
                ids: fromHex(bad.sparse.idsHex),
                grads: fromHex(bad.sparse.gradsHex),
              },
            ],
          )
          .then(
            () => undefined,
            (err: unknown) => err,
          );
        expect({ name: bad.name, failure }).toMatchObject({
          name: bad.name,
          failure: { code: bad.errorCode },
        });
        expect(status[(failure as RpcError).status]).toBe(bad.code);
      }
    } finally {
      owner.close();
    }
    expect(hex(await client.step((ctx) => ctx.lookup(emb, ids(probe))))).toBe(expected.afterHex);
  });
});

scenario('finishJob', 'the end of a job', () => {
  const { cluster, trainer } = clusterPerScenario();

  it('finishes once the quorum of trainers asked, and then every pserver leaves', async () => {
    const { trainers, quorum, leaveWithinMs } = scenarios.finishJob as {
      trainers: string[];
      quorum: number;
      leaveWithinMs: number;
    };
    const answers: boolean[] = [];
    for (const name of trainers) {
      const client = await trainer(name);
      answers.push(await client.finishJob({ trainers: quorum }));
      await client.close();
    }
    expect(answers).toEqual([...trainers.slice(1).map(() => false), true]);
    await waitFor(() => cluster().serving().size === 0, {
      timeoutMs: leaveWithinMs,
      description: 'every pserver of the finished job left',
    });
  });
});
