import fs from 'node:fs';
import path from 'node:path';
import {
  bucketOfBigInt,
  bucketOfId,
  bucketsOfIds,
  fmix32,
  maxTableBuckets,
  tableShardOf,
  tableShards,
} from './table-placement';

interface Vectors {
  max_buckets: number;
  fmix32: { input: number; output: number }[];
  ids: { id: string; lo: number; hi: number; buckets: { buckets: number; bucket: number }[] }[];
  tables: { name: string; buckets: number; shards: number; bucket_shards: number[] }[];
  id_shards: {
    name: string;
    buckets: number;
    shards: number;
    ids: string[];
    id_shards: number[];
  }[];
}

// Computed by proto/testdata/generate_table_placement.py, independently of this implementation.
const vectors = JSON.parse(
  fs.readFileSync(
    path.join(__dirname, '..', '..', '..', 'proto', 'testdata', 'table_placement.json'),
    'utf8',
  ),
) as Vectors;

/** The ids as int64 little-endian bytes, the way they travel. */
function int64Bytes(ids: bigint[], offset = 0): Uint8Array {
  const bytes = new Uint8Array(offset + 8 * ids.length).subarray(offset);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  ids.forEach((id, i) => view.setBigInt64(8 * i, id, true));
  return bytes;
}

describe('table placement test vectors (proto/testdata/table_placement.json)', () => {
  it('has the contract maximum and the edge ids', () => {
    expect(vectors.max_buckets).toBe(maxTableBuckets);
    const ids = vectors.ids.map((c) => BigInt(c.id));
    for (const edge of [0n, 1n, -1n, 2n ** 31n, 2n ** 32n, 2n ** 53n + 1n, -(2n ** 63n)]) {
      expect(ids).toContain(edge);
    }
    expect(ids).toContain(2n ** 63n - 1n);
  });

  it.each(vectors.fmix32)('fmix32($input) = $output', ({ input, output }) => {
    expect(fmix32(input)).toBe(output);
  });

  it.each(vectors.ids)('id $id: its halves and buckets', ({ id, lo, hi, buckets }) => {
    const bytes = int64Bytes([BigInt(id)]);
    const view = new DataView(bytes.buffer);
    expect([view.getUint32(0, true), view.getUint32(4, true)]).toEqual([lo, hi]);
    for (const c of buckets) {
      expect({ buckets: c.buckets, bucket: bucketOfId(lo, hi, c.buckets) }).toEqual(c);
      expect(bucketOfId(lo | 0, hi | 0, c.buckets)).toBe(c.bucket);
      expect(bucketOfBigInt(BigInt(id), c.buckets)).toBe(c.bucket);
    }
  });

  it.each(vectors.ids[0]!.buckets.map((c) => c.buckets))(
    'bucketsOfIds over all ids, B=%i, aligned and not',
    (buckets) => {
      const ids = vectors.ids.map((c) => BigInt(c.id));
      const want = vectors.ids.map((c) => c.buckets.find((b) => b.buckets === buckets)?.bucket);
      expect([...bucketsOfIds(int64Bytes(ids), buckets)]).toEqual(want);
      expect([...bucketsOfIds(int64Bytes(ids, 3), buckets)]).toEqual(want);
      expect([...bucketsOfIds(BigInt64Array.from(ids), buckets)]).toEqual(want);
    },
  );

  it.each(vectors.tables)('tableShards($name, $buckets, $shards)', (c) => {
    expect([...tableShards(c.name, c.buckets, c.shards)]).toEqual(c.bucket_shards);
  });

  it.each(vectors.id_shards)('the shards of ids in $name, B=$buckets, N=$shards', (c) => {
    const ids = c.ids.map((id) => BigInt(id));
    const buckets = bucketsOfIds(int64Bytes(ids), c.buckets);
    expect([...buckets].map((b) => tableShardOf(c.name, b, c.shards))).toEqual(c.id_shards);
  });
});

describe('table placement', () => {
  it('keeps the standard MurmurHash3 finalizer', () => {
    expect(fmix32(1)).toBe(0x514e28b7);
  });

  it('places bucket b as the block table@b', () => {
    const shards = tableShards('emb', 4096, 7);
    expect(shards).toHaveLength(4096);
    for (const b of [0, 9, 10, 99, 100, 999, 1000, 4095]) {
      expect(shards[b]).toBe(tableShardOf('emb', b, 7));
    }
  });

  it('spreads the buckets of a table over all shards', () => {
    expect(new Set(tableShards('emb', 1024, 5))).toEqual(new Set([0, 1, 2, 3, 4]));
  });

  it.each([0, 3, 1000, 2 ** 25, 0.5, -4])('rejects %p buckets', (buckets) => {
    const message = `buckets must be a power of two in [1, 2^24], got ${buckets}`;
    expect(() => bucketOfId(1, 0, buckets)).toThrow(message);
    expect(() => bucketsOfIds(new Uint8Array(8), buckets)).toThrow(message);
    expect(() => tableShards('emb', buckets, 2)).toThrow(message);
  });

  it('rejects ids outside int64 and bytes that are not whole int64 values', () => {
    expect(() => bucketOfBigInt(2n ** 63n, 16)).toThrow('id must be a signed 64-bit integer');
    expect(() => bucketOfBigInt(-(2n ** 63n) - 1n, 16)).toThrow('id must be a signed 64-bit');
    expect(() => bucketsOfIds(new Uint8Array(12), 16)).toThrow('got 12 bytes');
  });
});
