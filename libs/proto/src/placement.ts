/**
 * The placement rule (proto/README.md, "Placement"), identical in every language: a tensor larger
 * than the job's block size is split into blocks `<name>@<k>`, and each block (or a small tensor,
 * under its own name) goes to shard jump(fnv1a64(utf8(block name)), shards). Jump consistent
 * hashing moves only about 1/(N+1) of the blocks when the shard count grows from N to N+1.
 */

/** The default block size in elements. */
export const defaultBlockSize = 1_048_576;

/** Separates a tensor's name from a block index; never part of a tensor's own name. */
export const blockSeparator = '@';

/** A block's place: its name, the elements [start, end) of the flattened tensor, its shard. */
export interface BlockPlacement {
  name: string;
  start: number;
  end: number;
  shard: number;
}

const fnvOffsetBasis = 0xcbf29ce484222325n;
const fnvPrime = 0x100000001b3n;
const utf8 = new TextEncoder();

/**
 * FNV-1a, 64-bit. `from` continues the hash of a prefix (the value this function returned for
 * it), so names that share a prefix hash it once.
 */
export function fnv1a64(bytes: Uint8Array, from: bigint = fnvOffsetBasis): bigint {
  let hash = from;
  for (const byte of bytes) {
    hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * fnvPrime);
  }
  return hash;
}

/**
 * Lamping and Veach's jump consistent hash: a bucket in [0, buckets) for a 64-bit key. Its
 * division is an IEEE double, as in the paper's C++, so every language gets the same bucket.
 */
export function jumpHash(key: bigint, buckets: number): number {
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > 2 ** 31 - 1) {
    throw new RangeError(`jumpHash: buckets must be an integer in [1, 2^31), got ${buckets}`);
  }
  let b = -1;
  let j = 0;
  let k = key;
  while (j < buckets) {
    b = j;
    k = BigInt.asUintN(64, k * 2862933555777941757n + 1n);
    j = Math.trunc((b + 1) * (2147483648 / (Number(k >> 33n) + 1)));
  }
  return b;
}

/** The shard of a block (or of a tensor stored whole) among `shards`. */
export function shardOf(blockName: string, shards: number): number {
  return jumpHash(fnv1a64(utf8.encode(blockName)), shards);
}

/**
 * The blocks of a tensor of `elements` elements and where they go. A tensor of at most
 * `blockSize` elements is one block named as the tensor.
 */
export function placeTensor(
  name: string,
  elements: number,
  blockSize: number,
  shards: number,
): BlockPlacement[] {
  if (!Number.isSafeInteger(elements) || elements < 0) {
    throw new RangeError(`placeTensor: elements must be a non-negative integer, got ${elements}`);
  }
  if (!Number.isSafeInteger(blockSize) || blockSize < 1) {
    throw new RangeError(`placeTensor: blockSize must be a positive integer, got ${blockSize}`);
  }
  if (elements <= blockSize)
    return [{ name, start: 0, end: elements, shard: shardOf(name, shards) }];
  const blocks: BlockPlacement[] = [];
  for (let k = 0, start = 0; start < elements; k++, start += blockSize) {
    const blockName = `${name}${blockSeparator}${k}`;
    const end = Math.min(start + blockSize, elements);
    blocks.push({ name: blockName, start, end, shard: shardOf(blockName, shards) });
  }
  return blocks;
}

/** Splits a block name `<tensor>@<k>` into the tensor's name and k; a plain name has no k. */
export function parseBlockName(name: string): { tensor: string; block: number | undefined } {
  const at = name.lastIndexOf(blockSeparator);
  if (at < 0) return { tensor: name, block: undefined };
  const digits = name.slice(at + 1);
  const block = /^(0|[1-9][0-9]*)$/.test(digits) ? Number(digits) : Number.NaN;
  return { tensor: name.slice(0, at), block };
}

/** At most this many UTF-8 bytes in a tensor or block name. */
export const maxNameBytes = 1024;

/**
 * Why `name` is not a valid tensor or block name, or undefined when it is: non-empty, at most
 * `maxNameBytes` UTF-8 bytes, and `@` only as the separator of one decimal block index.
 */
export function invalidNameReason(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (utf8.encode(name).length > maxNameBytes) return `is longer than ${maxNameBytes} bytes`;
  const { tensor, block } = parseBlockName(name);
  if (tensor.length === 0) return 'has an empty tensor name before @';
  if (tensor.includes(blockSeparator)) return 'contains @ more than once';
  if (Number.isNaN(block)) return 'has a block index after @ that is not a decimal number';
  return undefined;
}
