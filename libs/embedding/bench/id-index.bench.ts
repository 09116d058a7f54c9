/**
 * IdIndex and RowArena at 100 k, 4 M and 10 M random 64-bit ids:
 *
 *   npx nx run embedding:bench            (or: ... -- 20000 to try other sizes)
 *
 * Per size: inserts/s growing from the default capacity (incremental growth), the longest single
 * insert with incremental growth and with a stop-the-world rehash (`migrateSlotsPerOp: Infinity`),
 * random lookups/s of held and of absent ids, and index bytes per id. Then 10 M rows of dim 16 in
 * a RowArena with their IdIndex: build time, bytes and a pull of 1 M random ids (lookupMany plus a
 * copy of each row).
 */
import { IdIndex, RowArena } from '../src';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const argSizes = process.argv.slice(2).map(Number).filter(Number.isFinite);
const sizes = argSizes.length > 0 ? argSizes : [100_000, 4_000_000, 10_000_000];
const arenaRows = argSizes.length > 0 ? Math.max(...argSizes) : 10_000_000;
const dim = 16;

/** mulberry32: a small seeded generator, so every run draws the same ids. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

interface Ids {
  lo: Uint32Array;
  hi: Uint32Array;
}

function randomIds(n: number, seed: number): Ids {
  const next = generator(seed);
  const ids = { lo: new Uint32Array(n), hi: new Uint32Array(n) };
  for (let i = 0; i < n; i++) {
    ids.lo[i] = next();
    ids.hi[i] = next();
  }
  return ids;
}

/** The same ids in a random order, so lookups do not follow insertion order. */
function shuffled(ids: Ids, seed: number): Ids {
  const next = generator(seed);
  const out = { lo: ids.lo.slice(), hi: ids.hi.slice() };
  for (let i = out.lo.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    const lo = out.lo[i]!;
    const hi = out.hi[i]!;
    out.lo[i] = out.lo[j]!;
    out.hi[i] = out.hi[j]!;
    out.lo[j] = lo;
    out.hi[j] = hi;
  }
  return out;
}

function seconds(run: () => void): number {
  const start = performance.now();
  run();
  return (performance.now() - start) / 1000;
}

function insertAll(index: IdIndex, ids: Ids): void {
  for (let i = 0; i < ids.lo.length; i++) index.insert(ids.lo[i]!, ids.hi[i]!, i);
}

/** The longest single insert, in ms, and how many took over 1 ms. */
function pauses(index: IdIndex, ids: Ids): { maxMs: number; over1Ms: number } {
  let maxMs = 0;
  let over1Ms = 0;
  for (let i = 0; i < ids.lo.length; i++) {
    const start = performance.now();
    index.insert(ids.lo[i]!, ids.hi[i]!, i);
    const ms = performance.now() - start;
    if (ms > maxMs) maxMs = ms;
    if (ms > 1) over1Ms++;
  }
  return { maxMs, over1Ms };
}

let sink = 0;

/** Best of 3 passes of at least `minLookups` lookups, in lookups/s. */
function lookupRate(index: IdIndex, queries: Ids, minLookups = 4_000_000): number {
  const n = queries.lo.length;
  const passes = Math.max(1, Math.ceil(minLookups / n));
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 3; round++) {
    const s = seconds(() => {
      let acc = 0;
      for (let p = 0; p < passes; p++) {
        for (let i = 0; i < n; i++) acc += index.get(queries.lo[i]!, queries.hi[i]!);
      }
      sink += acc;
    });
    best = Math.min(best, s);
  }
  return (passes * n) / best;
}

const mega = (x: number): string => `${(x / 1e6).toFixed(2)} M/s`;
const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function benchIndex(n: number): void {
  const ids = randomIds(n, n);
  const queries = shuffled(ids, 1);
  const absent = randomIds(Math.min(n, 4_000_000), n + 1);

  let index = new IdIndex();
  const insertSeconds = seconds(() => insertAll(index, ids));
  const hits = lookupRate(index, queries);
  const misses = lookupRate(index, absent);
  const bytesPerId = index.bytes / n;
  const capacity = index.capacity;
  gc();

  index = new IdIndex();
  const incremental = pauses(index, ids);
  gc();
  index = new IdIndex({ migrateSlotsPerOp: Number.POSITIVE_INFINITY });
  const stopTheWorld = pauses(index, ids);
  gc();

  console.log(
    `| ${n.toLocaleString('en')} | ${mega(n / insertSeconds)} | ${mega(hits)} | ${mega(misses)} | ` +
      `${incremental.maxMs.toFixed(2)} ms (${incremental.over1Ms} > 1 ms) | ` +
      `${stopTheWorld.maxMs.toFixed(2)} ms | ${bytesPerId.toFixed(1)} (capacity ${capacity}) |`,
  );
}

function benchTable(n: number): void {
  gc();
  const ids = randomIds(n, 7);
  const rssBefore = process.memoryUsage().rss;
  const arena = new RowArena({ stride: dim });
  const index = new IdIndex();
  const buildSeconds = seconds(() => {
    for (let i = 0; i < n; i++) {
      const row = arena.allocate();
      arena.setId(row, ids.lo[i]!, ids.hi[i]!);
      arena.view(row)[0] = i; // an initial value, so the copy below is checkable
      index.insert(ids.lo[i]!, ids.hi[i]!, row);
    }
  });
  const rssAfter = process.memoryUsage().rss;

  // A pull: 1 M random held ids as the int64 LE bytes of a request, rows copied into the reply.
  const m = Math.min(n, 1_000_000);
  const pick = generator(3);
  const request = new Uint8Array(8 * m);
  const words = new Uint32Array(request.buffer);
  const expected = new Int32Array(m);
  for (let k = 0; k < m; k++) {
    const i = pick() % n;
    words[2 * k] = ids.lo[i]!;
    words[2 * k + 1] = ids.hi[i]!;
    expected[k] = i;
  }
  const rows = new Int32Array(m);
  const reply = new Float32Array(m * dim);
  const pullSeconds = seconds(() => {
    index.lookupMany(request, rows);
    for (let k = 0; k < m; k++) {
      const row = rows[k]!;
      const values = arena.chunk(row >>> arena.shift).values;
      const offset = arena.offset(row);
      reply.set(values.subarray(offset, offset + dim), k * dim);
    }
  });
  for (let k = 0; k < m; k++) {
    if (reply[k * dim] !== expected[k]) throw new Error(`pull ${k}: wrong row`);
  }
  const bytes = arena.bytes + index.bytes;
  console.log(
    `\n${n.toLocaleString('en')} rows of dim ${dim}: built in ${buildSeconds.toFixed(2)} s ` +
      `(${mega(n / buildSeconds)}); RowArena ${mib(arena.bytes)} + IdIndex ${mib(index.bytes)} = ` +
      `${mib(bytes)}, ${(bytes / n).toFixed(1)} bytes per row (values ${4 * dim}); ` +
      `RSS grew ${mib(rssAfter - rssBefore)}; ` +
      `pull of ${m.toLocaleString('en')} random ids: ${mega(m / pullSeconds)} rows`,
  );
}

/** What filling a grown slot array with −1 would cost the growing insert (slots store row + 1). */
function benchFill(): void {
  const n = 2 ** 25;
  gc();
  const allocate = seconds(() => void new Int32Array(n));
  gc();
  const fill = seconds(() => void new Int32Array(n).fill(-1));
  console.log(
    `\nallocating 2^25 slots (${mib(4 * n)}): ${(allocate * 1000).toFixed(1)} ms; ` +
      `allocating and filling with −1: ${(fill * 1000).toFixed(1)} ms`,
  );
}

console.log(`Node ${process.version}, ${process.arch}`);
console.log(
  '\n| ids | inserts | lookups (held) | lookups (absent) | longest insert, incremental | ' +
    'longest insert, stop-the-world | index bytes per id |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const n of sizes) benchIndex(n);
benchTable(arenaRows);
benchFill();
if (sink === 0.5) console.log(sink); // keeps the lookups from being optimized away
