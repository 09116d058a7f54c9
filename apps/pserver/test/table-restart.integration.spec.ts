import { SparseTable, type SparseTableOptions } from '@pserver/embedding';
import type { RequestContext, SparseGrad, TableSpec, TableStatus__Output } from '@pserver/proto';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  type PserverProcess,
} from '@pserver/testing';

// What a table keeps across kill -9: the pending admission counts, the table's step and each
// row's lastSeen, and its eviction bounds. Each test drives a standalone pserver whose checkpoint
// directory is on /dev/shm (`tempDir`), forces a checkpoint with SaveCheckpoint, kills the process
// with SIGKILL and starts a new one on the same directory.

afterAll(stopAllProcesses);

const ids = (...values: number[]): Buffer =>
  bytesOf(BigInt64Array.from(values.map((v) => BigInt(v))));
const f32 = (...values: number[]): Buffer => bytesOf(Float32Array.from(values));
const floats = (bytes: Uint8Array): number[] => [
  ...new Float32Array(Uint8Array.from(bytes).buffer),
];
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** The bit of entry `k` of a GetRows `found` bitmap. */
const foundBits = (found: Uint8Array, n: number): number[] =>
  Array.from({ length: n }, (_, k) => (found[k >>> 3]! >>> (k & 7)) & 1);

class Shard {
  private constructor(
    readonly pserver: PserverProcess,
    readonly driver: PserverDriver,
    readonly epoch: number,
  ) {}

  static async start(checkpointDir: string): Promise<Shard> {
    const pserver = await startPserverProcess([], { checkpointDir, name: 'pserver-table-restart' });
    const driver = new PserverDriver(pserver.address);
    return new Shard(pserver, driver, await driver.epoch());
  }

  /** A fresh shard holding one table, initialized. */
  static async create(dir: string, spec: TableSpec): Promise<Shard> {
    const shard = await Shard.start(dir);
    await shard.driver.initTable(shard.ctx(), spec);
    await shard.driver.finishInitParams(shard.ctx());
    return shard;
  }

  ctx(step = 0): RequestContext {
    return { trainerId: 1, step, shardEpoch: this.epoch };
  }

  async rows(table: string, probe: Buffer): Promise<{ values: Buffer; found: number[] }> {
    const reply = await this.driver.getRows(this.ctx(), table, probe);
    return { values: Buffer.from(reply.values), found: foundBits(reply.found, probe.length / 8) };
  }

  async push(step: number, grad: SparseGrad) {
    const reply = await this.driver.sendGrads(this.ctx(step), [], [grad]);
    expect(reply.outcome).toBe('PUSH_OUTCOME_APPLIED');
    return reply.sparse[0]!;
  }

  async table(): Promise<TableStatus__Output> {
    return (await this.driver.status()).tables[0]!;
  }

  /** A committed checkpoint, then SIGKILL by PID: nothing after the commit may be written. */
  async checkpointAndKill(): Promise<void> {
    await this.driver.saveCheckpoint();
    this.driver.close();
    const exit = await this.pserver.process.stop({ signal: 'SIGKILL' });
    expect(exit.signal).toBe('SIGKILL');
  }

  async stop(): Promise<void> {
    this.driver.close();
    await this.pserver.process.stop();
  }
}

/** The same table in this process (shard 0 of 1), fed the same pushes. */
function reference(options: Omit<SparseTableOptions, 'shardIndex' | 'shardCount'>): SparseTable {
  return new SparseTable({ ...options, shardIndex: 0, shardCount: 1 });
}

/** Pushes `grad` to the shard and to the reference; both must report the same counts. */
async function pushBoth(shard: Shard, local: SparseTable, step: number, grad: SparseGrad) {
  const outcome = await shard.push(step, grad);
  const expected = local.apply(
    local.checkPush({ ids: grad.ids as Buffer, grads: grad.grads as Buffer }),
  );
  expect(outcome).toMatchObject({
    rowsUpdated: expected.rowsUpdated,
    rowsCreated: expected.rowsCreated,
    rowsRejected: expected.rowsRejected,
  });
  return outcome;
}

describe('tables across kill -9', () => {
  it('keep counting admission counts: an id one short of the threshold is admitted by its next push', async () => {
    const minCount = 3;
    const spec: TableSpec = {
      name: 'adm',
      dim: 4,
      buckets: 16,
      initializer: { uniform: { low: -0.1, high: 0.1 }, seed: 11 },
      optimizer: { sgd: {}, learningRate: { base: 0.5 } },
      admission: { counting: { minCount } },
    };
    const local = reference({
      name: 'adm',
      dim: 4,
      buckets: 16,
      init: { kind: 'uniform', low: -0.1, high: 0.1 },
      seedLo: 11,
      seedHi: 0,
      optimizer: { sgd: {}, learningRate: { base: 0.5 } },
      admission: { kind: 'counting', minCount },
    });
    const a = 101; // pushed T − 1 times before the restart
    const b = -(2 ** 40) - 7; // pushed T − 2 times before the restart
    const probe = ids(a, b);
    const dir = tempDir('table-restart-admission');
    const first = await Shard.create(dir, spec);
    const init = await first.rows('adm', probe);
    expect(init.found).toEqual([0, 0]);
    expect(hex(init.values)).toBe(hex(bytesOf(local.getRows(probe).values)));

    // Separate steps, one occurrence each: a twice, b once. None reaches the threshold.
    let step = 0;
    for (const grad of [
      { table: 'adm', ids: ids(a, b), grads: f32(9, 9, 9, 9, 9, 9, 9, 9) },
      { table: 'adm', ids: ids(a), grads: f32(9, 9, 9, 9) },
    ]) {
      const outcome = await pushBoth(first, local, ++step, grad);
      expect(outcome).toMatchObject({ rowsUpdated: 0, rowsCreated: 0 });
    }
    expect(await first.rows('adm', probe)).toEqual(init);
    expect(await first.table()).toMatchObject({ rows: 0, step: 2, rowsRejected: 3 });
    await first.checkpointAndKill();

    const second = await Shard.start(dir);
    expect(second.epoch).toBeGreaterThan(first.epoch);
    // Still no row: the bytes a pull read before any push, found bit clear.
    expect(await second.rows('adm', probe)).toEqual(init);
    expect(await second.table()).toMatchObject({ rows: 0, step: 2 });

    // The third occurrence of a admits it; b, at its second, stays out.
    const g = [1, -2, 4, 0.5];
    expect(
      await pushBoth(second, local, ++step, {
        table: 'adm',
        ids: ids(b, a),
        grads: f32(3, 3, 3, 3, ...g),
      }),
    ).toMatchObject({ rowsUpdated: 1, rowsCreated: 1, rowsRejected: 1 });
    const admitted = await second.rows('adm', probe);
    expect(admitted.found).toEqual([1, 0]);
    // Updated once, from its init value: w = init − η·g (η·g exact in float32).
    const initA = floats(init.values).slice(0, 4);
    expect(floats(admitted.values).slice(0, 4)).toEqual(
      initA.map((w, i) => Math.fround(w - 0.5 * g[i]!)),
    );
    expect(admitted.values.subarray(16).equals(init.values.subarray(16))).toBe(true);
    expect(hex(admitted.values)).toBe(hex(bytesOf(local.getRows(probe).values)));

    // b needs exactly two pushes after the restart: the first leaves it out, the second admits it.
    const h = [-1, 2, -4, 8];
    expect(
      await pushBoth(second, local, ++step, { table: 'adm', ids: ids(b), grads: f32(...h) }),
    ).toMatchObject({ rowsCreated: 1, rowsRejected: 0 });
    const both = await second.rows('adm', probe);
    expect(both.found).toEqual([1, 1]);
    const initB = floats(init.values).slice(4);
    expect(floats(both.values).slice(4)).toEqual(initB.map((w, i) => Math.fround(w - 0.5 * h[i]!)));
    expect(hex(both.values)).toBe(hex(bytesOf(local.getRows(probe).values)));
    expect(await second.table()).toMatchObject({ rows: 2, step: 4 });
    await second.stop();
  });
});
