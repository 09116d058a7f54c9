import { SparseTable } from '@pserver/embedding';
import type { RequestContext, SparseGrad, TableSpec, Tensor } from '@pserver/proto';
import type { RpcError } from '@pserver/rpc';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  type PserverProcess,
} from '@pserver/testing';

afterAll(stopAllProcesses);

const spec: TableSpec = {
  name: 'emb',
  dim: 4,
  buckets: 64,
  initializer: { uniform: { low: -0.1, high: 0.1 }, seed: 7 },
  optimizer: { adagrad: { initialAccumulator: 0.1 }, learningRate: { base: 0.5 } },
};
const dense: Tensor = {
  name: 'w',
  elementType: 'ELEMENT_TYPE_FLOAT32',
  content: bytesOf(new Float32Array([1, 2, 3, 4])),
};
const ids = (...values: number[]): Buffer =>
  bytesOf(BigInt64Array.from(values.map((v) => BigInt(v))));
const f32 = (...values: number[]): Buffer => bytesOf(Float32Array.from(values));
const probe = ids(1, 2, -3, 2 ** 40 + 5);

/** The same table in this process, to compute what the pserver must hold. */
function reference(): SparseTable {
  return new SparseTable({
    name: 'emb',
    dim: 4,
    buckets: 64,
    shardIndex: 0,
    shardCount: 1,
    init: { kind: 'uniform', low: -0.1, high: 0.1 },
    seedLo: 7,
    seedHi: 0,
    optimizer: { adagrad: { initialAccumulator: 0.1 }, learningRate: { base: 0.5 } },
  });
}

class Shard {
  constructor(
    readonly pserver: PserverProcess,
    readonly driver: PserverDriver,
    readonly epoch: number,
  ) {}

  static async start(checkpointDir: string): Promise<Shard> {
    const pserver = await startPserverProcess([], { checkpointDir, name: 'pserver-tables' });
    const driver = new PserverDriver(pserver.address);
    return new Shard(pserver, driver, await driver.epoch());
  }

  ctx(step = 0, trainerId = 1): RequestContext {
    return { trainerId, step, shardEpoch: this.epoch };
  }

  /** Every byte a client can read: the dense tensor, the probed rows and their found bits. */
  async bytes(): Promise<string> {
    const params = await this.driver.getParams(this.ctx(), ['w']);
    const rows = await this.driver.getRows(this.ctx(), 'emb', probe);
    return [params.params[0]!.content, rows.values, rows.found]
      .map((b) => Buffer.from(b).toString('hex'))
      .join('/');
  }

  push(step: number, sparse: SparseGrad[], grads: Tensor[] = [denseGrad(step)]) {
    return this.driver.sendGrads(this.ctx(step), grads, sparse);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    this.driver.close();
    await this.pserver.process.stop({ signal });
  }
}

/** A sparse gradient built here, with its byte fields present. */
type Grad = SparseGrad & { ids: Buffer; grads: Buffer; counts?: Buffer };

function denseGrad(step: number): Tensor {
  return { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32(step, -step, 0.5, 1) };
}

describe('sparse tables', () => {
  it('apply with the dense push once, refuse bad pushes whole, and survive kill -9', async () => {
    const dir = tempDir('tables');
    const shard = await Shard.start(dir);
    await shard.driver.initParam(shard.ctx(), dense, { sgd: {}, learningRate: { base: 0.1 } });
    await shard.driver.initTable(shard.ctx(), spec);
    await shard.driver.finishInitParams(shard.ctx());
    const local = reference();

    // Before any push: init values, nothing found, no row created by the pull.
    const first = await shard.driver.getRows(shard.ctx(), 'emb', probe);
    expect(Buffer.from(first.values).equals(bytesOf(local.getRows(probe).values))).toBe(true);
    expect([...first.found]).toEqual([0]);

    const grad: Grad = {
      table: 'emb',
      ids: ids(1, 2, 1),
      grads: f32(1, 2, 3, 4, 5, 6, 7, 8, 0.5, 0.5, 0.5, 0.5),
    };
    const reply = await shard.push(1, [grad]);
    expect(reply).toMatchObject({
      outcome: 'PUSH_OUTCOME_APPLIED',
      sparse: [{ table: 'emb', rowsUpdated: 2, rowsCreated: 2, rowsRejected: 0 }],
    });
    local.apply(local.checkPush(grad));
    const rows = await shard.driver.getRows(shard.ctx(), 'emb', probe);
    expect(Buffer.from(rows.values).equals(bytesOf(local.getRows(probe).values))).toBe(true);
    expect([...rows.found]).toEqual([0b0011]);
    const applied = await shard.bytes();

    // The resend of step 1 is a duplicate: nothing changes, dense or sparse.
    expect((await shard.push(1, [grad])).outcome).toBe('PUSH_OUTCOME_DUPLICATE');
    expect(await shard.bytes()).toBe(applied);

    // Bad sparse parts refuse the whole push, dense gradient included.
    const bad: [string, SparseGrad, string][] = [
      ['unknown table', { ...grad, table: 'nope' }, 'PSERVER_UNKNOWN_TENSOR'],
      ['wrong dim', { table: 'emb', ids: ids(1), grads: f32(1, 2, 3) }, 'PSERVER_LENGTH_MISMATCH'],
      [
        'ids not whole int64s',
        { table: 'emb', ids: Buffer.alloc(12), grads: f32(1, 2, 3, 4) },
        'PSERVER_LENGTH_MISMATCH',
      ],
      [
        'NaN',
        { table: 'emb', ids: ids(5, 1), grads: f32(1, 2, 3, 4, 5, NaN, 7, 8) },
        'PSERVER_NON_FINITE_GRADIENT',
      ],
    ];
    for (const [what, sparse, code] of bad) {
      const err = (await shard.push(2, [sparse]).catch((e: RpcError) => e)) as RpcError;
      expect({ what, code: err.code }).toEqual({ what, code });
      expect(await shard.bytes()).toBe(applied);
    }
    // The mark did not move: step 2 applies.
    const second: Grad = {
      table: 'emb',
      ids: ids(-3, 2),
      grads: f32(1, 1, 1, 1, -1, -1, -1, -1),
      counts: bytesOf(new Uint32Array([1, 1])),
    };
    expect((await shard.push(2, [second])).sparse[0]).toMatchObject({
      rowsUpdated: 2,
      rowsCreated: 1,
    });
    local.apply(local.checkPush(second));
    const status = await shard.driver.status();
    expect(status.tables).toEqual([
      expect.objectContaining({
        name: 'emb',
        dim: 4,
        rows: 3,
        step: 2,
        rowsCreated: 3,
        optimizer: 'adagrad',
      }),
    ]);

    // A committed checkpoint, then kill -9: the restarted shard holds the same bytes.
    await shard.driver.saveCheckpoint();
    const saved = await shard.bytes();
    await shard.stop('SIGKILL');
    const restarted = await Shard.start(dir);
    expect(await restarted.bytes()).toBe(saved);
    const restoredRows = await restarted.driver.getRows(restarted.ctx(), 'emb', probe);
    expect(Buffer.from(restoredRows.values).equals(bytesOf(local.getRows(probe).values))).toBe(
      true,
    );
    expect((await restarted.driver.status()).tables[0]).toMatchObject({ rows: 3, step: 2 });
    // It trains on from there exactly like the reference (optimizer state restored too).
    const third: Grad = {
      table: 'emb',
      ids: ids(1, 2 ** 40 + 5),
      grads: f32(1, 2, 3, 4, 4, 3, 2, 1),
    };
    expect((await restarted.push(3, [third])).outcome).toBe('PUSH_OUTCOME_APPLIED');
    local.apply(local.checkPush(third));
    const after = await restarted.driver.getRows(restarted.ctx(), 'emb', probe);
    expect(Buffer.from(after.values).equals(bytesOf(local.getRows(probe).values))).toBe(true);
    expect((await restarted.push(2, [second])).outcome).toBe('PUSH_OUTCOME_DUPLICATE');
    await restarted.stop();
  });

  it('refuses bad specs naming the field, and InitTable after initialization', async () => {
    const shard = await Shard.start(tempDir('tables-spec'));
    const refused = (s: TableSpec) =>
      shard.driver.initTable(shard.ctx(), s).catch((e: RpcError) => e) as Promise<RpcError>;
    expect(await refused({ ...spec, dim: 0 })).toMatchObject({
      code: 'PSERVER_INVALID_ARGUMENT',
      message: expect.stringContaining('spec.dim'),
    });
    expect(await refused({ ...spec, buckets: 48 })).toMatchObject({
      code: 'PSERVER_INVALID_ARGUMENT',
      message: expect.stringContaining('spec.buckets'),
    });
    expect(await refused({ ...spec, name: 'a@b' })).toMatchObject({ code: 'PSERVER_INVALID_NAME' });
    expect(await refused({ ...spec, optimizer: { sgd: {} } })).toMatchObject({
      code: 'OPTIMIZER_INVALID_CONFIG',
    });
    expect(
      await refused({ ...spec, admission: { probabilistic: { probability: 1.5 } } }),
    ).toMatchObject({ message: expect.stringContaining('admission.probabilistic.probability') });
    await shard.driver.initParam(shard.ctx(), dense, { sgd: {}, learningRate: { base: 0.1 } });
    expect(await refused({ ...spec, name: 'w' })).toMatchObject({ code: 'PSERVER_DUPLICATE_NAME' });
    await shard.driver.finishInitParams(shard.ctx());
    expect(await refused(spec)).toMatchObject({ code: 'PSERVER_ALREADY_INITIALIZED' });
    await shard.stop();
  });
});
