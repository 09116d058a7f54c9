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

  /** A committed checkpoint, then SIGKILL by PID: no shutdown checkpoint, no flush. */
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
    const c = 2 ** 62; // pushed once before the first restart and once before a second
    const probe = ids(a, b);
    const dir = tempDir('table-restart-admission');
    const first = await Shard.create(dir, spec);
    const init = await first.rows('adm', probe);
    expect(init.found).toEqual([0, 0]);
    expect(hex(init.values)).toBe(hex(bytesOf(local.getRows(probe).values)));

    const initC = await first.rows('adm', ids(c));
    expect(initC.found).toEqual([0]);

    // Separate steps, one occurrence each: a twice, b and c once. None reaches the threshold.
    let step = 0;
    for (const grad of [
      { table: 'adm', ids: ids(a, b, c), grads: f32(...Array<number>(12).fill(9)) },
      { table: 'adm', ids: ids(a), grads: f32(9, 9, 9, 9) },
    ]) {
      const outcome = await pushBoth(first, local, ++step, grad);
      expect(outcome).toMatchObject({ rowsUpdated: 0, rowsCreated: 0 });
    }
    expect(await first.rows('adm', probe)).toEqual(init);
    expect(await first.table()).toMatchObject({ rows: 0, step: 2, rowsRejected: 4 });
    await first.checkpointAndKill();

    const second = await Shard.start(dir);
    expect(second.epoch).toBeGreaterThan(first.epoch);
    // Still no row: the bytes a pull read before any push, found bit clear.
    expect(await second.rows('adm', probe)).toEqual(init);
    expect(await second.table()).toMatchObject({ rows: 0, step: 2 });

    // The third occurrence of a admits it; b, at its second, stays out.
    const g = [1, -2, 4, 0.5];
    expect(
      await pushBoth(second, local, 3, {
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
      await pushBoth(second, local, 4, { table: 'adm', ids: ids(b), grads: f32(...h) }),
    ).toMatchObject({ rowsCreated: 1, rowsRejected: 0 });
    const both = await second.rows('adm', probe);
    expect(both.found).toEqual([1, 1]);
    const initB = floats(init.values).slice(4);
    expect(floats(both.values).slice(4)).toEqual(initB.map((w, i) => Math.fround(w - 0.5 * h[i]!)));
    expect(hex(both.values)).toBe(hex(bytesOf(local.getRows(probe).values)));
    expect(await second.table()).toMatchObject({ rows: 2, step: 4 });

    // A second checkpoint holds the counts as they are then: c, at 2 before it, needs one more.
    expect(
      await pushBoth(second, local, 5, { table: 'adm', ids: ids(c), grads: f32(9, 9, 9, 9) }),
    ).toMatchObject({ rowsCreated: 0, rowsRejected: 1 });
    await second.checkpointAndKill();
    const third = await Shard.start(dir);
    expect(await third.rows('adm', probe)).toEqual(both);
    expect(await third.rows('adm', ids(c))).toEqual(initC);
    const k = [0.5, 0.5, -1, 2];
    expect(
      await pushBoth(third, local, 6, { table: 'adm', ids: ids(c), grads: f32(...k) }),
    ).toMatchObject({ rowsCreated: 1, rowsRejected: 0 });
    const readC = await third.rows('adm', ids(c));
    expect(readC.found).toEqual([1]);
    expect(floats(readC.values)).toEqual(
      floats(initC.values).map((w, i) => Math.fround(w - 0.5 * k[i]!)),
    );
    expect(await third.table()).toMatchObject({ rows: 3, step: 6 });
    await third.stop();
  });

  it('keep the table step and every lastSeen: TTL evicts exactly the rows unseen for ttl_steps', async () => {
    const ttlSteps = 3;
    const spec: TableSpec = {
      name: 'ttl',
      dim: 3,
      buckets: 8,
      initializer: { normal: { mean: 0, stddev: 0.5 }, seed: 2 ** 33 + 5 },
      // Adam corrected by the table's step: a step lost in the restart changes every update.
      optimizer: {
        adam: { biasCorrection: 'ADAM_BIAS_CORRECTION_TABLE_STEP' },
        learningRate: { base: 0.01 },
      },
      eviction: { ttlSteps },
    };
    const local = reference({
      name: 'ttl',
      dim: 3,
      buckets: 8,
      init: { kind: 'normal', mean: 0, stddev: 0.5 },
      seedLo: 5,
      seedHi: 2,
      optimizer: { adam: { biasCorrection: 'table' }, learningRate: { base: 0.01 } },
      ttlSteps,
    });
    const [a, b, c, d, filler] = [1, 2, -3, 2 ** 50 + 1, 77];
    const probe = ids(a, b, c, d);
    const grad = (...pushed: number[]): SparseGrad => ({
      table: 'ttl',
      ids: ids(...pushed),
      grads: f32(...pushed.flatMap((id, k) => [k + 1, -0.5, id % 7])),
    });
    /** The shard reads what the reference holds, and holds as many rows. */
    const expectLikeReference = async (shard: Shard) => {
      const read = await shard.rows('ttl', probe);
      const expected = local.getRows(probe);
      expect(read.found).toEqual(foundBits(expected.found, 4));
      expect(hex(read.values)).toBe(hex(bytesOf(expected.values)));
      expect(await shard.table()).toMatchObject({ rows: local.rows, step: local.step });
      return read;
    };
    const dir = tempDir('table-restart-ttl');
    const first = await Shard.create(dir, spec);
    const missing = await first.rows('ttl', probe);
    expect(missing.found).toEqual([0, 0, 0, 0]);

    // Table steps 1..3; lastSeen a = 2, b = 3, c = d = 1.
    await pushBoth(first, local, 1, grad(a, b, c, d));
    await pushBoth(first, local, 2, grad(a));
    await pushBoth(first, local, 3, grad(b));
    const saved = await expectLikeReference(first);
    expect(saved.found).toEqual([1, 1, 1, 1]);
    await first.checkpointAndKill();

    const second = await Shard.start(dir);
    expect(await second.rows('ttl', probe)).toEqual(saved);
    expect(await second.table()).toMatchObject({ rows: 4, step: 3, rowsEvicted: 0 });

    // Step 4: c and d are 3 steps old, not more: kept.
    await pushBoth(second, local, 4, grad(filler));
    expect((await expectLikeReference(second)).found).toEqual([1, 1, 1, 1]);
    // Step 5: c and d go (4 steps), a (3) and b (2) stay.
    await pushBoth(second, local, 5, grad(filler));
    const five = await expectLikeReference(second);
    expect(five.found).toEqual([1, 1, 0, 0]);
    expect(await second.table()).toMatchObject({ rows: 3, rowsEvicted: 2 });
    // Step 6: a goes.
    await pushBoth(second, local, 6, grad(filler));
    expect((await expectLikeReference(second)).found).toEqual([0, 1, 0, 0]);
    // Step 7: b goes; c, pushed again, starts over from its init value.
    await pushBoth(second, local, 7, grad(c));
    const seven = await expectLikeReference(second);
    expect(seven.found).toEqual([0, 0, 1, 0]);
    expect(await second.table()).toMatchObject({ rows: 2, step: 7, rowsEvicted: 4 });

    // An evicted id reads the bytes it read before it ever had a row.
    const entry = (values: Buffer, k: number) => hex(values.subarray(12 * k, 12 * (k + 1)));
    for (const k of [0, 1, 3]) expect(entry(seven.values, k)).toBe(entry(missing.values, k));
    expect(entry(five.values, 2)).toBe(entry(missing.values, 2));
    expect(entry(seven.values, 2)).not.toBe(entry(missing.values, 2));

    // Checkpointed after the evictions: the restarted shard does not bring the evicted rows back.
    await second.checkpointAndKill();
    const third = await Shard.start(dir);
    expect(await third.rows('ttl', probe)).toEqual(seven);
    expect(await third.table()).toMatchObject({ rows: 2, step: 7 });
    await pushBoth(third, local, 8, grad(filler));
    expect((await expectLikeReference(third)).found).toEqual([0, 0, 1, 0]);
    await third.stop();
  });

  it('keep max_rows: the bound holds before and after the restart, and the table serves on', async () => {
    const maxRows = 8;
    const spec: TableSpec = {
      name: 'bounded',
      dim: 2,
      buckets: 4,
      initializer: { constant: { value: 0.25 } },
      optimizer: { sgd: {}, learningRate: { base: 1 } },
      eviction: { maxRows },
    };
    const batch = (first: number) => Array.from({ length: 5 }, (_, k) => first + k);
    const pushNew = async (shard: Shard, step: number, fresh: number[]) => {
      const outcome = await shard.push(step, {
        table: 'bounded',
        ids: ids(...fresh),
        grads: f32(...fresh.flatMap((id) => [id, 1])),
      });
      expect(outcome).toMatchObject({ rowsCreated: fresh.length, rowsRejected: 0 });
    };
    /** Rows held, as the status counts them and as reads find them among every id pushed. */
    const held = async (shard: Shard, pushed: number[]) => {
      const status = await shard.table();
      const read = await shard.rows('bounded', ids(...pushed));
      const found = read.found.reduce((sum, bit) => sum + bit, 0);
      expect(found).toBe(status.rows);
      return { rows: status.rows, read };
    };
    const dir = tempDir('table-restart-max-rows');
    const first = await Shard.create(dir, spec);
    const pushed: number[] = [];
    for (let step = 1; step <= 4; step++) {
      const fresh = batch(1000 * step);
      await pushNew(first, step, fresh);
      pushed.push(...fresh);
      expect((await held(first, pushed)).rows).toBe(Math.min(pushed.length, maxRows));
    }
    const saved = await held(first, pushed);
    await first.checkpointAndKill();

    const second = await Shard.start(dir);
    const restored = await held(second, pushed);
    expect(restored.rows).toBe(maxRows);
    expect(restored.read).toEqual(saved.read);
    for (let step = 5; step <= 8; step++) {
      const fresh = batch(1000 * step);
      await pushNew(second, step, fresh);
      pushed.push(...fresh);
      expect((await held(second, pushed)).rows).toBe(maxRows);
    }
    // A row that is held takes updates; one evicted reads its init value and is created again.
    const { read } = await held(second, pushed);
    const survivor = pushed.find((_, k) => read.found[k] === 1)!;
    const evicted = pushed.find((_, k) => read.found[k] === 0)!;
    const before = floats((await second.rows('bounded', ids(survivor))).values);
    expect(floats((await second.rows('bounded', ids(evicted))).values)).toEqual([0.25, 0.25]);
    // Separate pushes: creating a row at the bound may evict any held row, the survivor too.
    expect(
      await second.push(9, { table: 'bounded', ids: ids(survivor), grads: f32(0.5, 0.5) }),
    ).toMatchObject({ rowsUpdated: 1, rowsCreated: 0 });
    const updated = await second.rows('bounded', ids(survivor));
    expect(updated.found).toEqual([1]);
    expect(floats(updated.values)).toEqual([before[0]! - 0.5, before[1]! - 0.5]);
    expect(
      await second.push(10, { table: 'bounded', ids: ids(evicted), grads: f32(0.5, 0.5) }),
    ).toMatchObject({ rowsUpdated: 1, rowsCreated: 1 });
    const created = await second.rows('bounded', ids(evicted));
    expect(created.found).toEqual([1]);
    expect(floats(created.values)).toEqual([-0.25, -0.25]);
    const last = await held(second, pushed);
    expect(last.rows).toBe(maxRows);

    // Checkpointed after rows were evicted for room: the evicted rows stay gone.
    await second.checkpointAndKill();
    const third = await Shard.start(dir);
    const again = await held(third, pushed);
    expect(again.rows).toBe(maxRows);
    expect(again.read).toEqual(last.read);
    const more = batch(11000);
    await pushNew(third, 11, more);
    pushed.push(...more);
    expect((await held(third, pushed)).rows).toBe(maxRows);
    await third.stop();
  });
});
