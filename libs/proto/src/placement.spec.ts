import fs from 'node:fs';
import path from 'node:path';
import {
  fnv1a64,
  invalidNameReason,
  jumpHash,
  parseBlockName,
  placeTensor,
  shardOf,
} from './placement';

interface Vectors {
  fnv1a64: { input: string; hash: string }[];
  jump: { key: string; buckets: number; bucket: number }[];
  placement: {
    name: string;
    elements: number;
    block_size: number;
    shards: number;
    blocks: { name: string; start: number; end: number; shard: number }[];
  }[];
}

// Computed by proto/testdata/generate_placement.py, independently of this implementation.
const vectors = JSON.parse(
  fs.readFileSync(
    path.join(__dirname, '..', '..', '..', 'proto', 'testdata', 'placement.json'),
    'utf8',
  ),
) as Vectors;

describe('placement test vectors (proto/testdata/placement.json)', () => {
  it('has at least 30 placement cases', () => {
    expect(vectors.placement.length).toBeGreaterThanOrEqual(30);
  });

  it.each(vectors.fnv1a64)('fnv1a64($input) = $hash', ({ input, hash }) => {
    expect(fnv1a64(new TextEncoder().encode(input)).toString(16).padStart(16, '0')).toBe(hash);
  });

  it.each(vectors.jump)('jump($key, $buckets) = $bucket', ({ key, buckets, bucket }) => {
    expect(jumpHash(BigInt(`0x${key}`), buckets)).toBe(bucket);
  });

  it.each(
    vectors.placement.map((c) => [
      `${c.name.slice(0, 24)} n=${c.elements} B=${c.block_size} N=${c.shards}`,
      c,
    ]),
  )('%s', (_label, c) => {
    expect(placeTensor(c.name, c.elements, c.block_size, c.shards)).toEqual(c.blocks);
  });
});

describe('placement', () => {
  it('keeps the standard FNV-1a 64 values', () => {
    expect(fnv1a64(new TextEncoder().encode('a'))).toBe(0xaf63dc4c8601ec8cn);
  });

  it('continues the hash of a prefix', () => {
    const utf8 = new TextEncoder();
    expect(fnv1a64(utf8.encode('3'), fnv1a64(utf8.encode('w@')))).toBe(fnv1a64(utf8.encode('w@3')));
  });

  it('spreads a big tensor over all shards', () => {
    const shards = new Set(placeTensor('embedding', 64 * 1024, 1024, 4).map((b) => b.shard));
    expect([...shards].sort()).toEqual([0, 1, 2, 3]);
  });

  it('moves only the blocks that go to the new shard when the count grows', () => {
    const names = Array.from({ length: 2000 }, (_, i) => `t${i}`);
    const moved = names.filter((n) => shardOf(n, 5) !== shardOf(n, 4));
    expect(moved.every((n) => shardOf(n, 5) === 4)).toBe(true);
    // About 1/5 of them move; the bound is loose, the property above is the exact one.
    expect(moved.length).toBeGreaterThan(250);
    expect(moved.length).toBeLessThan(550);
  });

  it('rejects a bucket count outside [1, 2^31)', () => {
    expect(() => jumpHash(1n, 0)).toThrow('buckets must be an integer in [1, 2^31), got 0');
  });

  it('parses block names', () => {
    expect(parseBlockName('w@12')).toEqual({ tensor: 'w', block: 12 });
    expect(parseBlockName('w')).toEqual({ tensor: 'w', block: undefined });
    expect(parseBlockName('w@x').block).toBeNaN();
    expect(parseBlockName('w@01').block).toBeNaN();
  });

  it.each([
    ['empty', '', 'is empty'],
    ['@3', '@3', 'has an empty tensor name before @'],
    ['a@b@3', 'a@b@3', 'contains @ more than once'],
    ['w@', 'w@', 'has a block index after @ that is not a decimal number'],
    ['1025 bytes', 'x'.repeat(1025), 'is longer than 1024 bytes'],
  ])('rejects the name %s', (_label, name, reason) => {
    expect(invalidNameReason(name)).toBe(reason);
  });

  it('accepts tensor and block names, non-ASCII included', () => {
    for (const name of ['w', 'w@0', 'fc1.weight@17', '权重', '🙂 smile@2']) {
      expect(invalidNameReason(name)).toBeUndefined();
    }
  });
});
