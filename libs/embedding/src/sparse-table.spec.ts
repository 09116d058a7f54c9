import {
  Optimizer,
  type OptimizerConfigInput,
  type RowOptimizerConfigInput,
} from '@pserver/optimizer';
import { bucketOfBigInt, tableShardOf } from '@pserver/proto';
import { EmbeddingError } from './errors';
import { initDraw, writeInitRow } from './row-init';
import { SparseTable, type SparseTableOptions } from './sparse-table';

const ids = (...values: (number | bigint)[]): Uint8Array =>
  new Uint8Array(BigInt64Array.from(values.map((v) => BigInt(v))).buffer);
const f32 = (...values: number[]): Uint8Array => new Uint8Array(Float32Array.from(values).buffer);
const u32 = (...values: number[]): Uint8Array => new Uint8Array(Uint32Array.from(values).buffer);
const hex = (a: ArrayBufferView): string =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');

function table(options: Partial<SparseTableOptions> = {}): SparseTable {
  return new SparseTable({
    name: 'emb',
    dim: 2,
    buckets: 16,
    shardIndex: 0,
    shardCount: 1,
    init: { kind: 'uniform', low: -0.5, high: 0.5 },
    seedLo: 42,
    seedHi: 0,
    optimizer: { sgd: {}, learningRate: { base: 0.5 } },
    rowsPerChunk: 4,
    ...options,
  });
}

function push(t: SparseTable, grad: Parameters<SparseTable['checkPush']>[0]) {
  return t.apply(t.checkPush(grad));
}

/** Everything a client can observe of a table: values and found bits of the given ids. */
function observe(t: SparseTable, idBytes: Uint8Array): string {
  const { values, found } = t.getRows(idBytes);
  return `${hex(values)}/${hex(found)}/${t.rows}/${t.step}`;
}

describe('row init values', () => {
  it('follows the documented counter-based formula (values computed by hand in Python)', () => {
    expect([0, 1, 2].map((e) => initDraw(42, 0, 0, 7, 0, e))).toEqual([
      0.36376774311065674, 0.5618768930435181, 0.9906958341598511,
    ]);
    const uniform = new Float32Array(3);
    writeInitRow({ kind: 'uniform', low: -0.5, high: 0.5 }, 42, 0, 7, 0, uniform, 0, 3);
    expect([...uniform]).toEqual([-0.13623225688934326, 0.061876893043518066, 0.4906958341598511]);
    // id −1, seed 2^32 + 3: the halves of both.
    const normal = new Float32Array(2);
    writeInitRow({ kind: 'normal', mean: 1, stddev: 2 }, 3, 1, -1, -1, normal, 0, 2);
    expect([...normal]).toEqual([1.7077237367630005, -0.6463339328765869]);
  });
});

describe('SparseTable', () => {
  it('sums duplicate ids before one update', () => {
    const t = table({ optimizer: { adagrad: {}, learningRate: { base: 0.1 } } });
    const merged = table({ optimizer: { adagrad: {}, learningRate: { base: 0.1 } } });
    const outcome = push(t, { ids: ids(3, 9, 3), grads: f32(1, 2, 5, 6, 0.25, 0.5) });
    push(merged, { ids: ids(3, 9), grads: f32(1.25, 2.5, 5, 6) });
    expect(outcome).toMatchObject({ rowsUpdated: 2, rowsCreated: 2, rowsRejected: 0 });
    expect(observe(t, ids(3, 9))).toBe(observe(merged, ids(3, 9)));
  });

  it('pull never creates a row: missing ids read their init value (or zeros) and are not found', () => {
    const t = table();
    const first = t.getRows(ids(7, 8));
    const expected = new Float32Array(4);
    writeInitRow({ kind: 'uniform', low: -0.5, high: 0.5 }, 42, 0, 7, 0, expected, 0, 2);
    writeInitRow({ kind: 'uniform', low: -0.5, high: 0.5 }, 42, 0, 8, 0, expected, 2, 2);
    expect(hex(first.values)).toBe(hex(expected));
    expect([...first.found]).toEqual([0]);
    expect(t.rows).toBe(0);
    const zero = table({ pullMissing: 'zero' }).getRows(ids(7));
    expect([...zero.values]).toEqual([0, 0]);
    // A push starts a row from the same bytes: SGD with lr 0.5 and gradient 0 keeps them.
    push(t, { ids: ids(7), grads: f32(0, 0) });
    const after = t.getRows(ids(7));
    expect(hex(after.values)).toBe(hex(expected.subarray(0, 2)));
    expect([...after.found]).toEqual([1]);
  });

  it('a missing id reads its init bytes before creation and again after eviction', () => {
    const t = table({ ttlSteps: 1 });
    const before = hex(t.getRows(ids(5)).values);
    push(t, { ids: ids(5), grads: f32(1, 1) });
    expect(hex(t.getRows(ids(5)).values)).not.toBe(before);
    push(t, { ids: ids(6), grads: f32(1, 1) }); // step 2: 5 unseen for 1 step, kept
    expect([...t.getRows(ids(5)).found]).toEqual([1]);
    push(t, { ids: ids(6), grads: f32(1, 1) }); // step 3: unseen for 2 > 1, evicted
    const read = t.getRows(ids(5));
    expect([...read.found]).toEqual([0]);
    expect(hex(read.values)).toBe(before);
    expect(t.totals.rowsEvicted).toBe(1);
  });

  it('admits by count exactly at the threshold, counts summed over pushes and counts fields', () => {
    const t = table({ admission: { kind: 'counting', minCount: 3 } });
    expect(push(t, { ids: ids(1), grads: f32(1, 1) })).toMatchObject({ rowsRejected: 1 });
    expect(push(t, { ids: ids(1), grads: f32(1, 1) })).toMatchObject({ rowsRejected: 1 });
    expect(t.rows).toBe(0);
    expect(push(t, { ids: ids(1), grads: f32(1, 1) })).toMatchObject({
      rowsCreated: 1,
      rowsRejected: 0,
    });
    // counts: 2 occurrences then 1 more reaches 3.
    expect(push(t, { ids: ids(2), grads: f32(1, 1), counts: u32(2) }).rowsRejected).toBe(1);
    expect(push(t, { ids: ids(2), grads: f32(1, 1), counts: u32(1) }).rowsCreated).toBe(1);
    // Duplicates in one push count once each.
    expect(push(t, { ids: ids(4, 4, 4), grads: f32(1, 1, 1, 1, 1, 1) }).rowsCreated).toBe(1);
    expect(t.rows).toBe(3);
  });

  it('admits deterministically by probability: the same ids in two tables with the same seed', () => {
    const many = Array.from({ length: 400 }, (_, i) => i * 7919);
    const grads = new Uint8Array(new Float32Array(800).fill(1).buffer);
    const a = table({ admission: { kind: 'probabilistic', probability: 0.25 } });
    const b = table({ admission: { kind: 'probabilistic', probability: 0.25 } });
    const oa = push(a, { ids: ids(...many), grads });
    push(b, { ids: ids(...many), grads });
    expect(oa.rowsCreated + oa.rowsRejected).toBe(400);
    expect(oa.rowsCreated).toBeGreaterThan(50);
    expect(oa.rowsCreated).toBeLessThan(150);
    expect(hex(a.getRows(ids(...many)).found)).toBe(hex(b.getRows(ids(...many)).found));
  });

  it('TTL evicts exactly the rows unseen for more than ttl steps', () => {
    const t = table({ ttlSteps: 2 });
    push(t, { ids: ids(1, 2, 3), grads: new Uint8Array(24) }); // step 1
    push(t, { ids: ids(2), grads: new Uint8Array(8) }); // step 2
    push(t, { ids: ids(3), grads: new Uint8Array(8) }); // step 3: 1 unseen for 2, kept
    expect([...t.getRows(ids(1, 2, 3)).found]).toEqual([0b111]);
    push(t, { ids: ids(3), grads: new Uint8Array(8) }); // step 4: 1 unseen for 3 > 2
    expect([...t.getRows(ids(1, 2, 3)).found]).toEqual([0b110]);
    push(t, { ids: ids(3), grads: new Uint8Array(8) }); // step 5: 2 unseen for 3 > 2
    expect([...t.getRows(ids(1, 2, 3)).found]).toEqual([0b100]);
    expect(t.totals.rowsEvicted).toBe(2);
    expect(t.rows).toBe(1);
  });

  it('never holds more than max_rows, evicts the least recently pushed, reuses freed rows', () => {
    const t = table({ maxRows: 4, rowsPerChunk: 4 });
    push(t, { ids: ids(1, 2, 3, 4), grads: new Uint8Array(32) }); // step 1
    push(t, { ids: ids(2, 3, 4), grads: new Uint8Array(24) }); // step 2: 1 is the oldest
    const outcome = push(t, { ids: ids(5), grads: new Uint8Array(8) });
    expect(outcome).toMatchObject({ rowsCreated: 1, rowsEvicted: 1 });
    expect(t.rows).toBe(4);
    expect([...t.getRows(ids(1, 2, 3, 4, 5)).found]).toEqual([0b11110]);
    for (let i = 6; i < 40; i++) {
      push(t, { ids: ids(i, i + 100), grads: new Uint8Array(16) });
      expect(t.rows).toBeLessThanOrEqual(4);
    }
    // Every row came from the one chunk: freed rows were reused.
    expect(t.snapshotRows(100)[0]!.lastSeen.length).toBe(4);
    expect((t as unknown as { arena: { capacity: number } }).arena.capacity).toBe(4);
  });

  const denseCases: [string, RowOptimizerConfigInput, OptimizerConfigInput][] = [
    ['sgd', { sgd: {}, learningRate: { base: 0.05 } }, { sgd: {}, learningRate: { base: 0.05 } }],
    [
      'adagrad',
      { adagrad: { initialAccumulator: 0.1 }, learningRate: { base: 0.1 } },
      { adagrad: { initialAccumulator: 0.1 }, learningRate: { base: 0.1 } },
    ],
  ];
  it.each(denseCases)(
    '%s: a push of every id equals the dense update of the same matrix, bit for bit',
    (_name, rowConfig, denseConfig) => {
      const n = 6;
      const dim = 5;
      const t = table({ dim, optimizer: rowConfig, init: { kind: 'normal', mean: 0, stddev: 1 } });
      const all = ids(...Array.from({ length: n }, (_, i) => i * 1000 - 2));
      const dense = new Optimizer({
        elementType: 'ELEMENT_TYPE_FLOAT32',
        values: t.getRows(all).values,
        config: denseConfig,
        storage: 'js',
      });
      for (let step = 1; step <= 5; step++) {
        const g = Float32Array.from({ length: n * dim }, (_, i) => Math.sin(i * 7 + step) * step);
        push(t, { ids: all, grads: new Uint8Array(g.buffer) });
        dense.update(g);
      }
      expect(hex(t.getRows(all).values)).toBe(hex(dense.values));
    },
  );

  describe('bad input changes nothing', () => {
    const setup = (options: Partial<SparseTableOptions> = {}) => {
      const t = table(options);
      push(t, { ids: ids(1, 2), grads: f32(1, 2, 3, 4) });
      return { t, before: observe(t, ids(1, 2, 3)) };
    };
    const refused = (t: SparseTable, grad: Parameters<SparseTable['checkPush']>[0]) => {
      try {
        t.checkPush(grad);
      } catch (err) {
        expect(err).toBeInstanceOf(EmbeddingError);
        return (err as EmbeddingError).code;
      }
      throw new Error('accepted');
    };

    it.each([
      [
        'ids not whole int64s',
        { ids: new Uint8Array(12), grads: f32(1, 2) },
        'EMBEDDING_LENGTH_MISMATCH',
      ],
      ['wrong dim', { ids: ids(1), grads: f32(1, 2, 3) }, 'EMBEDDING_LENGTH_MISMATCH'],
      [
        'counts of another length',
        { ids: ids(3), grads: f32(1, 2), counts: u32(1, 1) },
        'EMBEDDING_LENGTH_MISMATCH',
      ],
      ['NaN', { ids: ids(3, 1), grads: f32(1, 2, NaN, 0) }, 'EMBEDDING_NON_FINITE_GRADIENT'],
      [
        'a duplicate sum that overflows',
        { ids: ids(3, 3), grads: f32(3e38, 0, 3e38, 0) },
        'EMBEDDING_NON_FINITE_GRADIENT',
      ],
    ])('%s', (_name, grad, code) => {
      const { t, before } = setup();
      expect(refused(t, grad)).toBe(code);
      expect(observe(t, ids(1, 2, 3))).toBe(before);
    });

    it('an id of another shard', () => {
      const t = table({ shardCount: 2 });
      let other = 0n;
      while (tableShardOf('emb', bucketOfBigInt(other, 16), 2) === 0) other++;
      expect(refused(t, { ids: ids(other), grads: f32(1, 1) })).toBe('EMBEDDING_WRONG_SHARD');
      expect(t.rows).toBe(0);
    });

    it('a table that cannot grow', () => {
      // One chunk of 4 rows fits in 200 bytes; a second does not.
      const { t, before } = setup({ maxBytes: 200 });
      expect(refused(t, { ids: ids(3, 4, 5), grads: new Uint8Array(24) })).toBe(
        'EMBEDDING_CAPACITY_EXHAUSTED',
      );
      expect(observe(t, ids(1, 2, 3))).toBe(before);
      expect(t.step).toBe(1);
    });
  });

  it('restores rows, step and pending admissions byte for byte', () => {
    const options = { admission: { kind: 'counting', minCount: 2 } as const, ttlSteps: 10 };
    const t = table({ ...options, optimizer: { adam: { biasCorrection: 'row' } } });
    push(t, { ids: ids(1, 2, 2, -5), grads: f32(1, 2, 3, 4, 5, 6, 7, 8) });
    push(t, { ids: ids(1, 9), grads: f32(1, 1, 1, 1) });
    const copy = table({ ...options, optimizer: { adam: { biasCorrection: 'row' } } });
    copy.restore(t.step, t.snapshotPending(), t.snapshotRows(1));
    const probe = ids(1, 2, -5, 9);
    expect(observe(copy, probe)).toBe(observe(t, probe));
    expect(hex(copy.snapshotRows(100)[0]!.values)).toBe(hex(t.snapshotRows(100)[0]!.values));
    // Both admit 9 on its next push, and update the same way.
    const next = { ids: ids(9, 2), grads: f32(1, 2, 3, 4) };
    push(t, next);
    push(copy, next);
    expect(observe(copy, probe)).toBe(observe(t, probe));
    expect(t.rows).toBe(3);
  });

  it('reshards in place to what a new shard restored from its buckets holds, byte for byte', () => {
    const options = {
      admission: { kind: 'counting', minCount: 2 } as const,
      ttlSteps: 50,
      optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.1 } },
    } satisfies Partial<SparseTableOptions>;
    const ones = (n: number): Uint8Array => f32(...Array.from({ length: 2 * n }, () => 1));
    const old = table(options);
    const all = Array.from({ length: 40 }, (_, k) => k - 20);
    push(old, { ids: ids(...all, ...all), grads: ones(80) });
    push(old, { ids: ids(...all.slice(0, 10), 100, 101), grads: ones(12) });
    // Shard 1 of 3 from now on, its step raised to 7: the rows and pending admissions of its
    // buckets stay, aged as they were; the others go.
    const held = (id: number): boolean =>
      tableShardOf('emb', bucketOfBigInt(BigInt(id), 16), 3) === 1;
    const mine = [...all, 100, 101].filter(held);
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.length).toBeLessThan(all.length);
    const fresh = table({ ...options, shardIndex: 1, shardCount: 3 });
    const pending = old.snapshotPending();
    const pendingIds = new BigInt64Array(Uint8Array.from(pending.ids).buffer);
    const keptPending = [...pendingIds.keys()].filter((k) => held(Number(pendingIds[k])));
    fresh.restoreState(7, {
      ids: ids(...keptPending.map((k) => pendingIds[k]!)),
      counts: Uint32Array.from(keptPending, (k) => pending.counts[k]!),
    });
    for (const section of old.snapshotRows(64)) {
      const rowIds = new BigInt64Array(Uint8Array.from(section.ids).buffer);
      const kept = [...rowIds.keys()].filter((k) => held(Number(rowIds[k])));
      fresh.restoreRows({
        ids: ids(...kept.map((k) => rowIds[k]!)),
        values: Float32Array.from(
          kept.flatMap((k) => [...section.values.subarray(k * old.stride, (k + 1) * old.stride)]),
        ),
        lastSeen: Uint32Array.from(kept, (k) => section.lastSeen[k]! + 7 - old.step),
        count: Uint32Array.from(kept, (k) => section.count[k]!),
      });
    }
    old.reshard(1, 3, 7);
    const digest = (t: SparseTable): string => {
      const parts: string[] = [];
      t.digest((bytes) => parts.push(hex(bytes)));
      return parts.join('');
    };
    expect(digest(old)).toBe(digest(fresh));
    expect(hex(old.snapshotPending().ids)).toBe(hex(fresh.snapshotPending().ids));
    // A row of a bucket it no longer holds is refused, and both go on alike.
    const theirs = all.find((id) => !held(id))!;
    expect(() => old.checkPush({ ids: ids(theirs), grads: ones(1) })).toThrow(EmbeddingError);
    const next = { ids: ids(...mine, ...mine), grads: ones(2 * mine.length) };
    push(old, next);
    push(fresh, next);
    expect(digest(old)).toBe(digest(fresh));
    expect(() => old.reshard(0, 3, 1)).toThrow(/step/);
  });

  it('reshards in place a shard that keeps every bucket it held, its rows only aged', () => {
    const options = {
      admission: { kind: 'counting', minCount: 2 } as const,
      optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.1 } },
    } satisfies Partial<SparseTableOptions>;
    // Shard 1 of 3, shrunk to 2: jump placement moves none of its buckets.
    const at = (id: number, count: number): number =>
      tableShardOf('emb', bucketOfBigInt(BigInt(id), 16), count);
    const candidates = Array.from({ length: 200 }, (_, k) => k - 100);
    const mine = candidates.filter((id) => at(id, 3) === 1);
    expect(mine.every((id) => at(id, 2) === 1)).toBe(true);
    const gained = candidates.find((id) => at(id, 3) === 2 && at(id, 2) === 1)!;
    const t = table({ ...options, shardIndex: 1, shardCount: 3 });
    const ones = (n: number): Uint8Array => f32(...Array.from({ length: 2 * n }, () => 1));
    // Pushed once: a pending admission, kept too.
    const pending = Array.from({ length: 100 }, (_, k) => 1_000 + k).find((id) => at(id, 3) === 1)!;
    push(t, { ids: ids(...mine, ...mine, pending), grads: ones(2 * mine.length + 1) });
    const rowsOf = (shift: number): string[] =>
      t
        .snapshotRows(64)
        .flatMap((section) =>
          [...new BigInt64Array(Uint8Array.from(section.ids).buffer)].map(
            (id, k) =>
              `${id}:${hex(section.values.subarray(k * t.stride, (k + 1) * t.stride))}/${section.lastSeen[k]! + shift}/${section.count[k]}`,
          ),
        );
    const pendingBefore = hex(t.snapshotPending().ids);
    expect(t.snapshotPending().counts.length).toBe(1);
    const same = rowsOf(0);
    t.reshard(1, 2, t.step);
    expect(rowsOf(0)).toEqual(same);
    const aged = rowsOf(3);
    t.reshard(1, 2, t.step + 3);
    expect(rowsOf(0)).toEqual(aged);
    expect(hex(t.snapshotPending().ids)).toBe(pendingBefore);
    // The buckets it gains take pushes now.
    expect(() => t.checkPush({ ids: ids(gained), grads: ones(1) })).not.toThrow();
  });

  it('takes the rows of some buckets of another table, as they are, aged, changing nothing of it', () => {
    const options = { optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.1 } } };
    const t = table(options);
    const all = Array.from({ length: 40 }, (_, k) => k * 7919 - 20);
    push(t, { ids: ids(...all), grads: f32(...all.flatMap((id) => [id / 100, 1])) });
    push(t, { ids: ids(...all.slice(0, 9)), grads: f32(...Array(18).fill(0.5)) });
    const keep = Uint8Array.from({ length: 16 }, (_, b) => (b % 3 === 1 ? 1 : 0));
    const held = (id: bigint): boolean => keep[bucketOfBigInt(id, 16)] === 1;
    /** Each row by id: values, last step (raised by `shift`) and count. */
    const byId = (from: SparseTable, shift = 0): Map<bigint, string> => {
      const rows = new Map<bigint, string>();
      for (const section of from.snapshotRows(5)) {
        const rowIds = new BigInt64Array(Uint8Array.from(section.ids).buffer);
        rowIds.forEach((id, k) => {
          const values = section.values.subarray(k * from.stride, (k + 1) * from.stride);
          rows.set(id, `${hex(values)}/${section.lastSeen[k]! + shift}/${section.count[k]}`);
        });
      }
      return rows;
    };
    const before = observe(t, ids(...all));
    const other = 1_000_003;
    const into = table(options);
    push(into, { ids: ids(other), grads: f32(1, 1) });
    const mine = byId(into);
    into.takeRows(t, keep, 3);
    const taken = new Map([...byId(t, 3)].filter(([id]) => held(id)));
    expect(taken.size).toBeGreaterThan(0);
    expect(taken.size).toBeLessThan(all.length);
    expect(byId(into)).toEqual(new Map([...mine, ...taken]));
    expect(observe(t, ids(...all))).toBe(before);
    // Every bucket kept gives every row; an id held twice is refused, and nothing changes.
    const whole = table(options);
    whole.takeRows(t, new Uint8Array(16).fill(1), 0);
    expect(byId(whole)).toEqual(byId(t));
    const after = byId(into);
    expect(() => into.takeRows(t, new Uint8Array(16).fill(1), 0)).toThrow(/twice/);
    expect(byId(into)).toEqual(after);
    expect(() => into.takeRows(t, new Uint8Array(8), 0)).toThrow(/keep/);
  });

  describe('deltas', () => {
    /** Every row of a table keyed by id, with lastSeen and count: what a checkpoint must keep. */
    function contents(t: SparseTable): Map<bigint, string> {
      const rows = new Map<bigint, string>();
      for (const section of t.snapshotRows(7)) {
        const rowIds = new BigInt64Array(Uint8Array.from(section.ids).buffer);
        rowIds.forEach((id, k) => {
          const values = section.values.subarray(k * t.stride, (k + 1) * t.stride);
          rows.set(id, `${hex(values)}/${section.lastSeen[k]}/${section.count[k]}`);
        });
      }
      return rows;
    }

    it('a full snapshot and the deltas after it restore the table byte for byte', () => {
      const options = {
        admission: { kind: 'counting', minCount: 2 } as const,
        ttlSteps: 6,
        maxRows: 12,
        sweepRowsPerPush: 3,
        optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.1 } },
      } satisfies Partial<SparseTableOptions>;
      const live = table(options);
      let seed = 7;
      const random = (n: number): number => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      const step = (): void => {
        const batch = Array.from({ length: 5 }, () => random(40) - 20);
        push(live, { ids: ids(...batch), grads: f32(...batch.flatMap((v) => [v / 10, 1])) });
      };
      for (let k = 0; k < 20; k++) step();
      const restored = table(options);
      restored.restore(live.step, live.snapshotPending(), live.snapshotRows(5));
      let evictions = 0;
      for (let round = 0; round < 6; round++) {
        for (let k = 0; k < 8; k++) step();
        const changes = live.snapshotChanges(5)!;
        evictions += changes.evictedIds.byteLength / 8;
        restored.replaceState(live.step, live.snapshotPending());
        restored.removeRows(changes.evictedIds);
        for (const section of changes.sections) restored.restoreRows(section, true);
        expect(contents(restored)).toEqual(contents(live));
        expect(hex(restored.snapshotPending().ids)).toBe(hex(live.snapshotPending().ids));
        expect(restored.step).toBe(live.step);
      }
      // The run evicted (TTL and max_rows), so the deltas carried evictions.
      expect(evictions).toBeGreaterThan(0);
      // And a delta holds only the rows pushed since the last snapshot.
      push(live, { ids: ids(3, 3), grads: f32(1, 1, 1, 1) });
      const one = live.snapshotChanges(5)!;
      expect(one.sections.reduce((n, s) => n + s.lastSeen.length, 0)).toBeLessThanOrEqual(1);
      expect(live.snapshotChanges(5)!.sections).toEqual([]);
    });

    it('weighs the next delta: rows pushed and ids evicted since the last snapshot', () => {
      const t = table({ maxRows: 4, rowsPerChunk: 4 });
      const perRow = 4 * t.stride + 16;
      push(t, { ids: ids(1, 2, 3), grads: new Uint8Array(8 * 3) });
      expect(t.changedBytes).toBe(3 * perRow);
      t.snapshotRows(10);
      expect(t.changedBytes).toBe(0);
      // Two pushed again, two new: one of the four rows is evicted for the second new one.
      push(t, { ids: ids(1, 2), grads: new Uint8Array(8 * 2) });
      push(t, { ids: ids(4, 5), grads: new Uint8Array(8 * 2) });
      expect(t.totals.rowsEvicted).toBe(1);
      const dirty = t.changedBytes;
      expect([3 * perRow + 8, 4 * perRow + 8]).toContain(dirty);
      const changes = t.snapshotChanges(10)!;
      const copied = changes.sections.reduce((n, s) => n + s.lastSeen.length, 0);
      expect(dirty).toBe(copied * perRow + changes.evictedIds.byteLength);
      expect(t.changedBytes).toBe(0);
    });

    it('copies rows in ascending bucket order, each section knowing its bucket range', () => {
      const t = table({ buckets: 16, rowsPerChunk: 8 });
      const all = Array.from({ length: 200 }, (_, k) => k * 31 - 3000);
      push(t, { ids: ids(...all), grads: new Uint8Array(8 * all.length) });
      const sections = t.snapshotRows(7);
      let previous = 0;
      let rows = 0;
      for (const section of sections) {
        const rowIds = new BigInt64Array(Uint8Array.from(section.ids).buffer);
        const buckets = [...rowIds].map((id) => bucketOfBigInt(id, 16));
        expect(buckets[0]).toBe(section.firstBucket);
        expect(buckets[buckets.length - 1]).toBe(section.lastBucket);
        for (const b of buckets) {
          expect(b).toBeGreaterThanOrEqual(previous);
          previous = b;
        }
        rows += rowIds.length;
      }
      expect(rows).toBe(200);
      expect(sections).toHaveLength(Math.ceil(200 / 7));
    });

    it.each([
      ['pushes, evictions and restored rows', false],
      ['a reshard that ages every row, then pushes', true],
    ])(
      'a snapshot taken copy-on-write holds the table as it was when it began, through %s',
      async (_, reshard) => {
        const options = {
          ttlSteps: 6,
          maxRows: 40,
          sweepRowsPerPush: 3,
          optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.1 } },
        } satisfies Partial<SparseTableOptions>;
        const live = table(options);
        let seed = 11;
        const random = (n: number): number => {
          seed = (seed * 1103515245 + 12345) % 2 ** 31;
          return seed % n;
        };
        const step = (): void => {
          const batch = Array.from({ length: 6 }, () => random(80) - 40);
          push(live, { ids: ids(...batch), grads: f32(...batch.flatMap((v) => [v / 10, 1])) });
        };
        for (let k = 0; k < 30; k++) step();
        const other = table(options);
        for (let k = 0; k < 30; k++) push(other, { ids: ids(k - 15), grads: f32(k, k) });
        const before = contents(live);
        const copiedBytes: number[] = [];
        const take = (bytes: number): Uint8Array => {
          copiedBytes.push(bytes);
          return new Uint8Array(bytes);
        };
        const snapshot = live.startSnapshotAllRows(7, take);
        expect(snapshot.rows).toBe(before.size);
        // Starting it copied nothing; what comes after keeps the rows it changes first (a push),
        // or copies their chunks whole (a reshard).
        expect(copiedBytes).toEqual([]);
        if (reshard) live.reshard(0, 1, live.step + 3);
        for (const section of other.snapshotRows(7)) live.restoreRows(section, true);
        for (let k = 0; k < 20; k++) step();
        expect(copiedBytes.length).toBeGreaterThan(0);
        expect(contents(live)).not.toEqual(before);
        const taken = new Map<bigint, string>();
        for (const section of await snapshot.sections()) {
          const rowIds = new BigInt64Array(Uint8Array.from(section.ids).buffer);
          rowIds.forEach((id, k) => {
            const values = section.values.subarray(k * live.stride, (k + 1) * live.stride);
            taken.set(id, `${hex(values)}/${section.lastSeen[k]}/${section.count[k]}`);
          });
        }
        expect(taken).toEqual(before);
        // Done: a push keeps nothing more, and another snapshot may begin.
        const copies = copiedBytes.length;
        step();
        expect(copiedBytes.length).toBe(copies);
        const next = live.startSnapshotAllRows(7, take);
        next.cancel();
        step();
        expect(copiedBytes.length).toBe(copies);
        await expect(next.sections()).rejects.toThrow(/cancelled/);
      },
    );

    it('asks for a full snapshot when the eviction log outgrew the table', () => {
      const t = table({ maxRows: 64, rowsPerChunk: 64 });
      // 9 pushes of 8,192 new ids: all but 64 evicted, 73,664 in all, over the log's 65,536.
      for (let k = 0; k < 9; k++) {
        const batch = Array.from({ length: 8192 }, (_, i) => k * 8192 + i);
        push(t, { ids: ids(...batch), grads: new Uint8Array(8 * 8192) });
      }
      expect(t.totals.rowsEvicted).toBe(9 * 8192 - 64);
      expect(t.snapshotChanges(5)).toBeUndefined();
      t.snapshotRows(5);
      push(t, { ids: ids(-1), grads: f32(1, 1) });
      expect(t.snapshotChanges(5)!.evictedIds.byteLength).toBe(8);
    });
  });
});
