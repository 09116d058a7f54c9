import fc from 'fast-check';
import { EmbeddingError } from './errors';
import { fmix32, indexHash } from './hash';
import { capacityFor, IdIndex, maxLoad } from './id-index';

type Id = readonly [lo: number, hi: number];

const key = ([lo, hi]: Id): string => `${lo}:${hi}`;

/** Ids whose probe starts at the last slot of any table of up to 64 slots: they wrap around. */
function collidingIds(count: number): Id[] {
  const ids: Id[] = [];
  for (let lo = 0; ids.length < count; lo++) {
    if ((indexHash(lo, 7) & 63) === 63) ids.push([lo, 7]);
  }
  return ids;
}

const special: Id[] = [
  [0, 0], // 0
  [0xffffffff, 0xffffffff], // −1
  [0xfffffffe, 0xffffffff], // −2
  [0, 0x80000000], // −2^63
  [0xffffffff, 0x7fffffff], // 2^63 − 1
  [0, 0x200000], // 2^53
  [1, 0x200000], // 2^53 + 1
  [0, 1], // 2^32
];
const colliding = collidingIds(12);

const idArb: fc.Arbitrary<Id> = fc.oneof(
  fc.constantFrom(...special),
  { weight: 3, arbitrary: fc.constantFrom(...colliding) },
  // A small pool, so deletes and lookups hit ids inserted earlier.
  fc.tuple(fc.integer({ min: 0, max: 40 }), fc.constantFrom(0, 0x80000000, 0xffffffff)),
  fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff })),
);

type Op =
  | { kind: 'insert'; id: Id; row: number }
  | { kind: 'get'; id: Id }
  | { kind: 'delete'; id: Id }
  | { kind: 'reserve'; n: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('insert'),
      id: idArb,
      row: fc.nat({ max: 2 ** 31 - 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('get'), id: idArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete'), id: idArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reserve'), n: fc.nat({ max: 300 }) }) },
) as fc.Arbitrary<Op>;

function entries(index: IdIndex): Map<string, number> {
  const seen = new Map<string, number>();
  index.forEach((lo, hi, row) => {
    expect(seen.has(key([lo, hi]))).toBe(false);
    seen.set(key([lo, hi]), row);
  });
  return seen;
}

describe('IdIndex', () => {
  it('behaves as a Map through inserts, lookups, deletes, reserves and growth', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(0, 8, 16),
        fc.constantFrom(1, 2, 16, Number.POSITIVE_INFINITY),
        fc.array(opArb, { maxLength: 300 }),
        (initialCapacity, migrateSlotsPerOp, ops) => {
          const index = new IdIndex({ initialCapacity, migrateSlotsPerOp });
          const model = new Map<string, number>();
          for (const op of ops) {
            switch (op.kind) {
              case 'insert':
                expect(index.insert(op.id[0], op.id[1], op.row)).toBe(model.get(key(op.id)) ?? -1);
                model.set(key(op.id), op.row);
                break;
              case 'get':
                expect(index.get(op.id[0], op.id[1])).toBe(model.get(key(op.id)) ?? -1);
                break;
              case 'delete':
                expect(index.delete(op.id[0], op.id[1])).toBe(model.get(key(op.id)) ?? -1);
                model.delete(key(op.id));
                break;
              case 'reserve':
                expect(index.reserve(op.n)).toBe(true);
                expect(index.capacity).toBeGreaterThanOrEqual(capacityFor(op.n));
                break;
            }
            expect(index.size).toBe(model.size);
            expect(index.size).toBeLessThanOrEqual(Math.floor(index.capacity * maxLoad));
          }
          expect(entries(index)).toEqual(model);
          for (const [k, row] of model) {
            const [lo, hi] = k.split(':').map(Number) as [number, number];
            expect(index.get(lo, hi)).toBe(row);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('finds ids whose probe wraps past the last slot, also after deleting across the wrap', () => {
    const index = new IdIndex({ initialCapacity: 8 });
    const ids = colliding.slice(0, 5); // 5 of 8 slots: all start at slot 7
    ids.forEach(([lo, hi], row) => index.insert(lo, hi, row));
    expect(index.capacity).toBe(8);
    ids.forEach(([lo, hi], row) => expect(index.get(lo, hi)).toBe(row));
    expect(index.delete(ids[0]![0], ids[0]![1])).toBe(0); // the one in slot 7
    expect(index.delete(ids[2]![0], ids[2]![1])).toBe(2);
    expect(index.get(ids[0]![0], ids[0]![1])).toBe(-1);
    for (const row of [1, 3, 4]) expect(index.get(ids[row]![0], ids[row]![1])).toBe(row);
    expect(index.size).toBe(3);
  });

  it('deletes from the old table mid-growth and still finds the rest of its probe run', () => {
    const index = new IdIndex({ initialCapacity: 8, migrateSlotsPerOp: 1 });
    const ids = colliding.slice(0, 6);
    ids.slice(0, 5).forEach(([lo, hi], row) => index.insert(lo, hi, row)); // slots 7, 0, 1, 2, 3
    index.insert(ids[5]![0], ids[5]![1], 5); // grows to 16; migration starts at empty slot 4
    expect(index.migrating).toBe(true);
    expect(index.delete(ids[0]![0], ids[0]![1])).toBe(0); // slot 7: the run 0..3 shifts back
    expect(index.get(ids[0]![0], ids[0]![1])).toBe(-1);
    for (let row = 1; row < 6; row++) expect(index.get(ids[row]![0], ids[row]![1])).toBe(row);
    while (index.migrating) index.delete(0, 0);
    for (let row = 1; row < 6; row++) expect(index.get(ids[row]![0], ids[row]![1])).toBe(row);
  });

  it('keeps 64-bit ids apart that share their low or high half', () => {
    const index = new IdIndex();
    index.insert(1, 0, 10); // 1
    index.insert(1, 0x200000, 11); // 2^53 + 1, which is 2^53 as a double
    index.insert(1, 0xffffffff, 12); // −2^32 + 1
    index.insert(0xffffffff, 0xffffffff, 13); // −1
    index.insert(-1, -1, 14); // the same −1, halves given as int32
    expect([index.get(1, 0), index.get(1, 0x200000), index.get(1, 0xffffffff)]).toEqual([
      10, 11, 12,
    ]);
    expect(index.get(0xffffffff, 0xffffffff)).toBe(14);
    expect(index.size).toBe(4);
  });

  it('grows without a rehash: the crossing insert moves a few entries, lookups see both tables', () => {
    const migrateSlotsPerOp = 16;
    const index = new IdIndex({ initialCapacity: 1024, migrateSlotsPerOp });
    const limit = Math.floor(1024 * maxLoad);
    for (let i = 0; i < limit; i++) index.insert(i, 1, i);
    expect(index.capacity).toBe(1024);
    expect(index.migrating).toBe(false);

    index.insert(limit, 1, limit);
    expect(index.capacity).toBe(2048);
    expect(index.migrating).toBe(true);
    expect(index.pendingMigration).toBeGreaterThanOrEqual(limit - migrateSlotsPerOp);
    for (let i = 0; i <= limit; i++) expect(index.get(i, 1)).toBe(i);

    // Every insert and delete moves 16 old slots: 1024 slots take 64 operations.
    let ops = 0;
    for (let i = 0; index.migrating; i++, ops++) {
      if (i % 2 === 0) index.insert(100_000 + i, 2, i);
      else index.delete(i, 1);
    }
    expect(ops).toBeLessThanOrEqual(1024 / migrateSlotsPerOp);
    const model = new Map<string, number>();
    for (let i = 0; i <= limit; i++) if (!(i < ops && i % 2 === 1)) model.set(key([i, 1]), i);
    for (let i = 0; i < ops; i += 2) model.set(key([100_000 + i, 2]), i);
    expect(entries(index)).toEqual(model);
  });

  it('reserve pre-sizes, so that inserts up to that size never grow', () => {
    const index = new IdIndex({ initialCapacity: 0 });
    expect(index.reserve(10_000)).toBe(true);
    const capacity = index.capacity;
    expect(capacity).toBe(16_384);
    for (let i = 0; i < 10_000; i++) index.insert(i, i, i);
    expect(index.capacity).toBe(capacity);
    expect(index.migrating).toBe(false);
  });

  it('reserve refuses past 2^30 slots and changes nothing', () => {
    const index = new IdIndex({ initialCapacity: 8 });
    index.insert(5, 5, 5);
    expect(index.reserve(2 ** 30)).toBe(false);
    expect([index.capacity, index.size, index.get(5, 5)]).toEqual([8, 1, 5]);
  });

  it('refuses rows that do not fit its slots', () => {
    const index = new IdIndex();
    for (const row of [-1, 1.5, 2 ** 31 - 1, Number.NaN]) {
      expect(() => index.insert(1, 2, row)).toThrow(
        expect.objectContaining({ code: 'EMBEDDING_INVALID_ARGUMENT', field: 'row' }),
      );
    }
    expect(index.size).toBe(0);
  });

  it('spreads the ids of one placement bucket over its slots', () => {
    // A shard holds only ids whose placement hash fmix32(lo ^ fmix32(hi)) has its buckets' low
    // bits; had the index probed from that hash, these ids would all start at one slot.
    const slots = new Set<number>();
    let found = 0;
    for (let lo = 0; found < 1024; lo++) {
      if ((fmix32(lo ^ fmix32(0)) & 255) !== 0) continue;
      found++;
      slots.add(indexHash(lo, 0) & 511);
    }
    // 1024 random ids over 512 slots hit 1 − e^−2 ≈ 86 % of them.
    expect(slots.size).toBeGreaterThan(0.8 * 512);
  });

  it('is murmur3 fmix32', () => {
    expect([fmix32(0), fmix32(1), fmix32(0xffffffff), fmix32(0x12345678)]).toEqual([
      0, 0x514e28b7, 0x81f16f39, 0xe37cd1bc,
    ]);
  });

  describe('lookupMany', () => {
    function idsBuffer(ids: bigint[], byteOffset: number): Uint8Array {
      const bytes = new Uint8Array(byteOffset + 8 * ids.length).subarray(byteOffset);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      ids.forEach((id, k) => view.setBigInt64(8 * k, id, true));
      return bytes;
    }

    const held = [0n, -1n, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n, 123_456_789_012n];
    const index = new IdIndex();
    held.forEach((id, row) => {
      const u = BigInt.asUintN(64, id);
      index.insert(Number(u & 0xffffffffn), Number(u >> 32n), row);
    });

    it.each([0, 1, 4])('reads int64 LE ids at byte offset %i', (byteOffset) => {
      const ids = [...held, 7n, 2n ** 53n].reverse();
      const out = new Int32Array(ids.length);
      expect(index.lookupMany(idsBuffer(ids, byteOffset), out)).toBe(held.length);
      expect([...out]).toEqual([-1, -1, 5, 4, 3, 2, 1, 0]);
    });

    it('refuses a buffer that is not whole ids, or too short an output', () => {
      expect(() => index.lookupMany(new Uint8Array(12), new Int32Array(2))).toThrow(
        expect.objectContaining({ code: 'EMBEDDING_INVALID_ARGUMENT', field: 'ids' }),
      );
      expect(() => index.lookupMany(new Uint8Array(16), new Int32Array(1))).toThrow(EmbeddingError);
    });
  });
});
