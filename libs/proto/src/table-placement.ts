/**
 * The placement rule of sparse embedding tables (proto/README.md, "Placement", "Tables"),
 * identical in every language. A table of B buckets (a power of two) puts the row of a signed
 * 64-bit id in bucket fmix32(lo ^ fmix32(hi)) & (B - 1), lo and hi being the low and high 32 bits
 * of the id's two's complement: 32-bit arithmetic only, so no language needs 64-bit integers to
 * route a batch of ids. Bucket b of table T goes where the block `T@b` would go: the table is
 * placed as a tensor of B blocks.
 */
import { blockSeparator, fnv1a64, jumpHash, shardOf } from './placement';

/** The most buckets a table may have: a client holds one bucket → shard entry per bucket. */
export const maxTableBuckets = 2 ** 24;

/** MurmurHash3's 32-bit finalizer, on and to an unsigned 32-bit integer. */
export function fmix32(input: number): number {
  let h = input >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Throws unless `buckets` is a table's bucket count: a power of two in [1, 2^24]. */
export function checkTableBuckets(buckets: number, caller = 'table'): void {
  if (
    !Number.isInteger(buckets) ||
    buckets < 1 ||
    buckets > maxTableBuckets ||
    (buckets & (buckets - 1)) !== 0
  ) {
    throw new RangeError(`${caller}: buckets must be a power of two in [1, 2^24], got ${buckets}`);
  }
}

/**
 * The bucket of an id given as the low and high 32 bits of its two's complement (signed or
 * unsigned 32-bit numbers alike), among `buckets`.
 */
export function bucketOfId(lo: number, hi: number, buckets: number): number {
  checkTableBuckets(buckets, 'bucketOfId');
  return (fmix32((lo ^ fmix32(hi)) >>> 0) & (buckets - 1)) >>> 0;
}

const utf8 = new TextEncoder();
const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;

/** The bucket of a signed 64-bit id given as a bigint, among `buckets`. */
export function bucketOfBigInt(id: bigint, buckets: number): number {
  if (id < int64Min || id > int64Max) {
    throw new RangeError(`bucketOfBigInt: id must be a signed 64-bit integer, got ${id}`);
  }
  const lo = Number(BigInt.asUintN(32, id));
  const hi = Number(BigInt.asUintN(32, id >> 32n));
  return bucketOfId(lo, hi, buckets);
}

const littleEndianHost = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * The buckets of ids given as the bytes of int64 little-endian values (a `BigInt64Array` on a
 * little-endian host, or the bytes as they travel), without BigInt. The bytes may sit at any
 * offset, as grpc-js hands out buffers (proto/README.md, "Tensors").
 */
export function bucketsOfIds(ids: Uint8Array | BigInt64Array, buckets: number): Uint32Array {
  checkTableBuckets(buckets, 'bucketsOfIds');
  if (ids.byteLength % 8 !== 0) {
    throw new RangeError(
      `bucketsOfIds: ids must be whole int64 values, got ${ids.byteLength} bytes`,
    );
  }
  const count = ids.byteLength / 8;
  const out = new Uint32Array(count);
  const mask = buckets - 1;
  if (littleEndianHost && ids.byteOffset % 4 === 0) {
    const words = new Uint32Array(ids.buffer, ids.byteOffset, count * 2);
    for (let i = 0; i < count; i++) {
      out[i] = fmix32((words[2 * i]! ^ fmix32(words[2 * i + 1]!)) >>> 0) & mask;
    }
  } else {
    const view = new DataView(ids.buffer, ids.byteOffset, ids.byteLength);
    for (let i = 0; i < count; i++) {
      const lo = view.getUint32(8 * i, true);
      const hi = view.getUint32(8 * i + 4, true);
      out[i] = fmix32((lo ^ fmix32(hi)) >>> 0) & mask;
    }
  }
  return out;
}

/** The shard of bucket `bucket` of table `table` among `shardCount`: the block `table@bucket`'s. */
export function tableShardOf(table: string, bucket: number, shardCount: number): number {
  return shardOf(`${table}${blockSeparator}${bucket}`, shardCount);
}

/**
 * The shard of every bucket of table `table` among `shardCount`, indexed by bucket: what a client
 * computes once per cluster view, then routes an id with `shards[bucket]`.
 */
export function tableShards(table: string, buckets: number, shardCount: number): Uint32Array {
  checkTableBuckets(buckets, 'tableShards');
  const shards = new Uint32Array(buckets);
  // FNV-1a runs byte by byte: the bytes of `table@` are hashed once, then each bucket's digits.
  const prefix = fnv1a64(utf8.encode(`${table}${blockSeparator}`));
  const digits = new Uint8Array(8); // 2^24 - 1 has 8 digits
  for (let b = 0; b < buckets; b++) {
    const decimal = String(b);
    for (let i = 0; i < decimal.length; i++) digits[i] = decimal.charCodeAt(i);
    shards[b] = jumpHash(fnv1a64(digits.subarray(0, decimal.length), prefix), shardCount);
  }
  return shards;
}
