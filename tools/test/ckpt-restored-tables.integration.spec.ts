import { SparseTable } from '@pserver/embedding';
import type {
  TableEvictions__Output,
  TableRecord__Output,
  TableRows__Output,
} from '@pserver/proto';
import { bytesOf } from '@pserver/testing';
import { RestoredTables } from '../ckpt/restored-tables';

// The ids a chain restores, as ckpt export and inspect compute them, against the pserver's own
// table applying the same files (restoreRows, then removeRows and restoreRows(…, true) per
// delta): random chains, ids evicted and pushed again in the same delta included. No processes.

/** A file of a chain: evicted ids (a delta), then rows, in two sections each. */
interface ChainFileContent {
  evicted: bigint[];
  rows: bigint[];
}

function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

function randomChain(seed: number): ChainFileContent[] {
  const next = random(seed);
  // A small universe, negative and large ids among them, so files overlap a lot.
  const universe = Array.from({ length: 60 }, (_, k) =>
    k % 3 === 0 ? -(2n ** 50n) - BigInt(k) : BigInt(k),
  );
  const pick = (p: number): bigint[] => universe.filter(() => next() < p);
  const files: ChainFileContent[] = [{ evicted: [], rows: pick(0.5) }];
  const deltas = 1 + Math.floor(next() * 6);
  for (let d = 0; d < deltas; d++) files.push({ evicted: pick(0.2), rows: pick(0.15) });
  return files;
}

const halves = <T>(items: T[]): T[][] => [
  items.slice(0, items.length >> 1),
  items.slice(items.length >> 1),
];

/** The rows of file `index`: its index in the first value, so the winner can be told. */
function section(index: number, ids: bigint[]) {
  return {
    ids: bytesOf(BigInt64Array.from(ids)),
    values: Float32Array.from(ids.flatMap(() => [index, 0])),
    lastSeen: new Uint32Array(ids.length),
    count: new Uint32Array(ids.length).fill(1),
  };
}

/** What the pserver restores: id → the index of the file whose row it holds. */
function restoreWithSparseTable(files: ChainFileContent[]): Map<bigint, number> {
  const table = new SparseTable({
    name: 'emb',
    dim: 2,
    buckets: 16,
    shardIndex: 0,
    shardCount: 1,
    init: { kind: 'uniform', low: -0.5, high: 0.5 },
    seedLo: 1,
    seedHi: 0,
    optimizer: { sgd: {}, learningRate: { base: 0.1 } },
  });
  const pending = { ids: new Uint8Array(0), counts: new Uint32Array(0) };
  table.restoreState(0, pending);
  files.forEach((file, index) => {
    if (index > 0) {
      table.replaceState(index, pending);
      for (const part of halves(file.evicted)) table.removeRows(bytesOf(BigInt64Array.from(part)));
    }
    for (const part of halves(file.rows)) table.restoreRows(section(index, part), index > 0);
  });
  const restored = new Map<bigint, number>();
  for (const s of table.snapshotRows(1000)) {
    const ids = new BigInt64Array(s.ids.buffer, s.ids.byteOffset, s.ids.byteLength / 8);
    ids.forEach((id, k) => restored.set(id, s.values[k * table.stride]!));
  }
  return restored;
}

function restoreWithTool(files: ChainFileContent[]): Map<bigint, number> {
  const tables = new RestoredTables();
  files.forEach((file, index) => {
    tables.file(index, `shard-0/file-${index}.ckpt`);
    tables.table({ spec: { name: 'emb' } } as TableRecord__Output);
    for (const part of halves(file.evicted))
      tables.tableEvictions({
        table: 'emb',
        ids: bytesOf(BigInt64Array.from(part)),
      } as TableEvictions__Output);
    for (const part of halves(file.rows))
      tables.tableRows({
        table: 'emb',
        ids: bytesOf(BigInt64Array.from(part)),
      } as TableRows__Output);
  });
  tables.end();
  const emb = tables.tables.get('emb')!;
  // Sorted as signed 64-bit integers, as the export writes them.
  expect([...emb.ids]).toEqual([...emb.ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  return new Map([...emb.ids].map((id, k) => [id, emb.owners[k]!]));
}

describe('the ids a chain restores', () => {
  it.each(Array.from({ length: 40 }, (_, seed) => [seed]))(
    'match the pserver table for random chain %i',
    (seed) => {
      const files = randomChain(seed);
      const sorted = (m: Map<bigint, number>) =>
        [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      expect(sorted(restoreWithTool(files))).toEqual(sorted(restoreWithSparseTable(files)));
    },
  );

  it('keep a delta’s row for an id it evicted and pushed again, and drop an id evicted later', () => {
    const restored = restoreWithTool([
      { evicted: [], rows: [1n, 2n, 3n] },
      { evicted: [2n], rows: [2n, 4n] },
      { evicted: [3n, 4n, 9n], rows: [] },
    ]);
    expect([...restored]).toEqual([
      [1n, 0],
      [2n, 1],
    ]);
  });

  it('refuse a file with two rows of one id, naming the file', () => {
    expect(() => restoreWithTool([{ evicted: [], rows: [5n, 7n, 5n] }])).toThrow(
      'shard-0/file-0.ckpt: table emb: id 5 has two rows',
    );
  });
});
