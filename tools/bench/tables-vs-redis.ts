/**
 * A sparse table in one pserver against the same table in Redis, side by side on loopback with
 * the same driver: lookups and pushes with a row-wise Adagrad update of Zipf(1.05) batches of
 * 4,096 ids, deduplicated per batch as a client does. Per configuration (ids × dim): a warm-up,
 * a fill that pushes every id once, then timed lookup and push phases with several batches in
 * flight, the server's CPU from /proc/<pid>/stat and its memory per row.
 *
 *   npx nx run tools:bench-tables                 # 1 M and 10 M ids, dim 16 and 64
 *   npx nx run tools:bench-tables -- --quick      # 1 M ids, dim 16, short phases
 *
 * Flags: --ids 1000000,10000000  --dims 16,64  --seconds 8  --warmup-seconds 1.5
 * --inflight 6  --batch 4096  --zipf-batches 512  --keys-per-command 512  --systems pserver,redis
 * --cpu-prof-dir DIR (the pserver writes a CPU profile there when it stops)
 *
 * The pserver is driven with `PserverDriver` (plain GetRows and SendGrads with `sparse`, one
 * trainer, a new step per push), not the trainer client's `lookup`/`pushRows`: a batch here is
 * already one shard's distinct ids, so the client's dedup, routing and scatter would add driver
 * work in this process that the Redis side does not have.
 */
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import {
  appBundle,
  PserverDriver,
  spawnProcess,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  type PserverProcess,
} from '@pserver/testing';
import type { RequestContext, TableSpec } from '@pserver/proto';
import { ensureRedisServer, RedisTable, startRedisServer } from './tables-redis';
import { makeWorkload, seededRandom, type Batch, type Workload } from './tables-workload';

interface Options {
  ids: number[];
  dims: number[];
  seconds: number;
  warmupSeconds: number;
  inflight: number;
  batch: number;
  zipfBatches: number;
  keysPerCommand: number;
  systems: ('pserver' | 'redis')[];
  learningRate: number;
  /** Where the pserver writes a CPU profile (node --cpu-prof), if anywhere. */
  cpuProfDir?: string;
}

function parseOptions(argv: string[]): Options {
  const quick = argv.includes('--quick');
  const options: Options = {
    ids: quick ? [1_000_000] : [1_000_000, 10_000_000],
    dims: quick ? [16] : [16, 64],
    seconds: quick ? 3 : 8,
    warmupSeconds: quick ? 1 : 1.5,
    inflight: 6,
    batch: 4096,
    zipfBatches: quick ? 256 : 512,
    keysPerCommand: 512,
    systems: ['pserver', 'redis'],
    learningRate: 0.01,
  };
  const numbers = (value: string): number[] => value.split(',').map((v) => Number(v));
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--quick') continue;
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--ids') options.ids = numbers(value);
    else if (flag === '--dims') options.dims = numbers(value);
    else if (flag === '--seconds') options.seconds = Number(value);
    else if (flag === '--warmup-seconds') options.warmupSeconds = Number(value);
    else if (flag === '--inflight') options.inflight = Number(value);
    else if (flag === '--batch') options.batch = Number(value);
    else if (flag === '--zipf-batches') options.zipfBatches = Number(value);
    else if (flag === '--keys-per-command') options.keysPerCommand = Number(value);
    else if (flag === '--cpu-prof-dir') options.cpuProfDir = value;
    else if (flag === '--systems') options.systems = value.split(',') as Options['systems'];
    else throw new Error(`unknown flag ${flag}`);
  }
  for (const [name, value] of Object.entries(options))
    for (const v of [value].flat())
      if (typeof v === 'number' && !(Number.isFinite(v) && v > 0))
        throw new Error(`--${name}: a positive number, got ${v}`);
  return options;
}

// ---- measuring a process ------------------------------------------------------------------

const clockTicks = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system, all threads) the process has used. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: state is field 3, utime field 14, stime field 15 (proc(5)).
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

function rssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

interface PhaseResult {
  batches: number;
  requested: number;
  rows: number;
  seconds: number;
  serverCores: number;
  driverCores: number;
}

/**
 * Runs `op` over `batches` with `inflight` calls in flight: once through them (`seconds`
 * undefined) or cycling until `seconds` have passed.
 */
async function runPhase(
  serverPid: number,
  batches: Batch[],
  inflight: number,
  seconds: number | undefined,
  op: (batch: Batch, index: number, lane: number) => Promise<void>,
): Promise<PhaseResult> {
  let next = 0;
  let requested = 0;
  let rows = 0;
  let done = 0;
  const cpu0 = cpuSeconds(serverPid);
  const driver0 = process.cpuUsage();
  const start = performance.now();
  const deadline = seconds === undefined ? Infinity : start + seconds * 1000;
  const lane = async (_: unknown, lane: number): Promise<void> => {
    while (performance.now() < deadline && (seconds !== undefined || next < batches.length)) {
      const index = next++;
      const batch = batches[index % batches.length]!;
      await op(batch, index, lane);
      requested += batch.requested;
      rows += batch.ids.length / 8;
      done++;
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
  const wall = (performance.now() - start) / 1000;
  const driver = process.cpuUsage(driver0);
  return {
    batches: done,
    requested,
    rows,
    seconds: wall,
    serverCores: (cpuSeconds(serverPid) - cpu0) / wall,
    driverCores: (driver.user + driver.system) / 1e6 / wall,
  };
}

// ---- the two systems ----------------------------------------------------------------------

interface SystemResult {
  fill: PhaseResult;
  lookup: PhaseResult;
  push: PhaseResult;
  /** Memory growth over the fill, per row. */
  bytesPerRow: number;
  /** The table's own figure (pserver only). */
  tableBytesPerRow?: number;
  notes: string[];
}

interface System {
  readonly pid: number;
  lookup(batch: Batch): Promise<number>;
  push(batch: Batch, grads: Float32Array, lane: number): Promise<void>;
  memory(): Promise<number>;
  rows(): Promise<number>;
  stop(): Promise<void>;
}

/** A pool of gradients (batch × dim, small seeded values); push i takes pool[i % length]. */
function gradientPool(batch: number, dim: number): Float32Array[] {
  const random = seededRandom(dim * 7919);
  return Array.from({ length: 4 }, () =>
    Float32Array.from({ length: batch * dim }, () => (random() - 0.5) * 0.02),
  );
}

/**
 * A standalone pserver as the integration tests start it; with `cpuProfDir`, the same bundle and
 * arguments under `node --cpu-prof` (a flag NODE_OPTIONS may not carry).
 */
async function startPserver(cpuProfDir: string | undefined): Promise<PserverProcess> {
  if (!cpuProfDir) return startPserverProcess([], { name: 'bench-tables-pserver' });
  const checkpointDir = tempDir('checkpoints');
  const child = spawnProcess(
    process.execPath,
    [
      ...['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, appBundle('pserver')],
      ...['--port', '0', '--log-format', 'json', '--checkpoint-dir', checkpointDir],
    ],
    { name: 'bench-tables-pserver' },
  );
  const listening = await child.waitForLog((entry) => entry.msg === 'listening', {
    timeoutMs: 20_000,
  });
  return { process: child, address: String(listening.address), checkpointDir };
}

async function startPserverSystem(dim: number, workload: Workload, options: Options) {
  const pserver = await startPserver(options.cpuProfDir);
  const driver = new PserverDriver(pserver.address);
  const epoch = await driver.epoch();
  const context: RequestContext = { trainerId: 1, step: 0, shardEpoch: epoch };
  const spec: TableSpec = {
    name: 'emb',
    dim,
    buckets: 1 << 16,
    optimizer: { rowwiseAdagrad: {}, learningRate: { base: options.learningRate } },
    expectedRows: workload.idCount,
  };
  const rssBefore = rssBytes(pserver.process.pid);
  await driver.initTable(context, spec);
  await driver.finishInitParams(context);
  // One trainer id per call in flight: a trainer's pushes must arrive in step order (a step not
  // above the trainer's mark is a duplicate), and concurrent calls on one channel can overtake
  // each other.
  const steps = new Array<number>(options.inflight).fill(0);
  const system: System & { rssBefore: number } = {
    pid: pserver.process.pid,
    rssBefore,
    async lookup(batch) {
      const reply = await driver.getRows(context, 'emb', batch.ids);
      const n = batch.ids.length / 8;
      if (reply.values.byteLength !== n * dim * 4)
        throw new Error(`GetRows answered ${reply.values.byteLength} bytes for ${n} rows`);
      let found = 0;
      for (const byte of reply.found) for (let b = byte; b; b &= b - 1) found++;
      return found;
    },
    async push(batch, grads, lane) {
      const n = batch.ids.length / 8;
      const step = ++steps[lane]!;
      const reply = await driver.sendGrads(
        { ...context, trainerId: lane + 1, step },
        [],
        [{ table: 'emb', ids: batch.ids, grads: Buffer.from(grads.buffer, 0, n * dim * 4) }],
      );
      // A duplicate applied nothing: counting its rows would inflate the rate.
      if (reply.outcome !== 'PUSH_OUTCOME_APPLIED')
        throw new Error(`push ${step} of trainer ${lane + 1}: ${reply.outcome}`);
    },
    memory: () => Promise.resolve(rssBytes(pserver.process.pid)),
    rows: async () => (await driver.status()).tables.find((t) => t.name === 'emb')?.rows ?? 0,
    async stop() {
      driver.close();
      await pserver.process.stop();
    },
  };
  const tableBytesPerRow = async (): Promise<number> =>
    (await driver.status()).tables.find((t) => t.name === 'emb')?.bytesPerRow ?? NaN;
  return { system, tableBytesPerRow };
}

async function startRedisSystem(dim: number, options: Options) {
  const server = await startRedisServer();
  const table = new RedisTable(
    {
      port: server.port,
      dim,
      learningRate: options.learningRate,
      keysPerCommand: options.keysPerCommand,
    },
    options.batch,
  );
  const system: System = {
    pid: server.process.pid,
    lookup: (batch) => table.lookup(batch),
    async push(batch, grads) {
      await table.push(batch, grads);
    },
    memory: () => table.usedMemory(),
    rows: () => table.dbsize(),
    async stop() {
      table.close();
      await server.process.stop();
    },
  };
  return system;
}

async function measure(
  system: System,
  workload: Workload,
  dim: number,
  options: Options,
): Promise<Omit<SystemResult, 'tableBytesPerRow' | 'notes'>> {
  const grads = gradientPool(options.batch, dim);
  const { zipf, fill } = workload;
  const lookup = async (batch: Batch): Promise<void> => {
    await system.lookup(batch);
  };
  const push = (batch: Batch, i: number, lane: number): Promise<void> =>
    system.push(batch, grads[i % grads.length]!, lane);
  // Warm-up on the empty table: lookups only, so no row exists before the fill.
  await runPhase(system.pid, zipf, options.inflight, options.warmupSeconds, lookup);
  const memoryBefore = await system.memory();
  const filled = await runPhase(system.pid, fill, options.inflight, undefined, push);
  const memoryAfter = await system.memory();
  const rows = await system.rows();
  if (rows !== workload.idCount)
    throw new Error(`after the fill the table holds ${rows} rows, not ${workload.idCount}`);
  const probe = zipf[0]!;
  const found = await system.lookup(probe);
  if (found !== probe.ids.length / 8)
    throw new Error(`after the fill a lookup found ${found} of ${probe.ids.length / 8} rows`);
  await runPhase(system.pid, zipf, options.inflight, options.warmupSeconds, lookup);
  const looked = await runPhase(system.pid, zipf, options.inflight, options.seconds, lookup);
  await runPhase(system.pid, zipf, options.inflight, options.warmupSeconds, push);
  const pushed = await runPhase(system.pid, zipf, options.inflight, options.seconds, push);
  return {
    fill: filled,
    lookup: looked,
    push: pushed,
    bytesPerRow: (memoryAfter - memoryBefore) / rows,
  };
}

async function runPserver(
  dim: number,
  workload: Workload,
  options: Options,
): Promise<SystemResult> {
  const { system, tableBytesPerRow } = await startPserverSystem(dim, workload, options);
  try {
    const rssBefore = system.rssBefore;
    const result = await measure(system, workload, dim, options);
    const rssGrowth = (rssBytes(system.pid) - rssBefore) / workload.idCount;
    const notes = [];
    notes.push(`RSS growth from before InitTable to the end: ${rssGrowth.toFixed(1)} B/row`);
    return { ...result, tableBytesPerRow: await tableBytesPerRow(), notes };
  } finally {
    await system.stop();
  }
}

async function runRedis(dim: number, workload: Workload, options: Options): Promise<SystemResult> {
  const system = await startRedisSystem(dim, options);
  try {
    const result = await measure(system, workload, dim, options);
    return { ...result, notes: [] };
  } finally {
    await system.stop();
  }
}

// ---- report -------------------------------------------------------------------------------

const goals = {
  pushPerCore: 1.5e6,
  lookupPerCore: 5e6,
  ratio: 2,
  memory: (dim: number): number => 1.25 * (dim + 1) * 4 + 24,
};

const millions = (v: number): string => (v / 1e6).toFixed(2);
const rate = (p: PhaseResult): number => p.rows / p.seconds;
const perCore = (p: PhaseResult): number => rate(p) / p.serverCores;
const verdict = (met: boolean): string => (met ? 'met' : '**not met**');

interface ConfigResult {
  ids: number;
  dim: number;
  pserver?: SystemResult;
  redis?: SystemResult;
}

function report(results: ConfigResult[], options: Options): string {
  const lines: string[] = [];
  lines.push(
    `Batches of ${options.batch} ids, Zipf(1.05), deduplicated; ${options.inflight} batches in flight; ` +
      `${options.seconds} s per timed phase. M = 10^6 rows/s (unique rows); requested = ids asked for, duplicates included.`,
  );
  lines.push('');
  lines.push(
    '| ids | dim | system | operation | rows/s (M) | requested ids/s (M) | server cores | rows/s per core (M) | driver cores |',
  );
  lines.push('| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    for (const name of ['pserver', 'redis'] as const) {
      const s = r[name];
      if (!s) continue;
      for (const [op, p] of [
        ['fill (push, new rows)', s.fill],
        ['lookup', s.lookup],
        ['push + update', s.push],
      ] as const) {
        lines.push(
          `| ${millions(r.ids)} M | ${r.dim} | ${name} | ${op} | ${millions(rate(p))} | ` +
            `${millions(p.requested / p.seconds)} | ${p.serverCores.toFixed(2)} | ` +
            `${millions(perCore(p))} | ${p.driverCores.toFixed(2)} |`,
        );
      }
    }
  }
  lines.push('');
  lines.push(
    '| ids | dim | pserver B/row (memory growth) | pserver B/row (table) | Redis B/row (used_memory) | goal B/row | lookup pserver/Redis | push pserver/Redis | lookup per core pserver/Redis | push per core pserver/Redis |',
  );
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    const p = r.pserver;
    const q = r.redis;
    const ratio = (f: (s: SystemResult) => number): string =>
      p && q ? (f(p) / f(q)).toFixed(2) : '–';
    lines.push(
      `| ${millions(r.ids)} M | ${r.dim} | ${p ? p.bytesPerRow.toFixed(1) : '–'} | ` +
        `${p?.tableBytesPerRow ?? '–'} | ${q ? q.bytesPerRow.toFixed(1) : '–'} | ` +
        `${goals.memory(r.dim).toFixed(0)} | ${ratio((s) => rate(s.lookup))} | ` +
        `${ratio((s) => rate(s.push))} | ${ratio((s) => perCore(s.lookup))} | ` +
        `${ratio((s) => perCore(s.push))} |`,
    );
  }
  lines.push('');
  lines.push('| goal | configuration | measured | verdict |');
  lines.push('| --- | --- | ---: | --- |');
  for (const r of results) {
    const p = r.pserver;
    const q = r.redis;
    const where = `${millions(r.ids)} M ids, dim ${r.dim}`;
    if (p && r.dim === 16) {
      lines.push(
        `| ≥ 1.5 M row-updates/s per pserver core | ${where} | ${millions(perCore(p.push))} M | ${verdict(perCore(p.push) >= goals.pushPerCore)} |`,
      );
      lines.push(
        `| ≥ 5 M row lookups/s per pserver core | ${where} | ${millions(perCore(p.lookup))} M | ${verdict(perCore(p.lookup) >= goals.lookupPerCore)} |`,
      );
    }
    if (p && q) {
      const l = rate(p.lookup) / rate(q.lookup);
      const u = rate(p.push) / rate(q.push);
      lines.push(
        `| lookup rows/s ≥ 2 × Redis | ${where} | ${l.toFixed(2)} × | ${verdict(l >= goals.ratio)} |`,
      );
      lines.push(
        `| push rows/s ≥ 2 × Redis | ${where} | ${u.toFixed(2)} × | ${verdict(u >= goals.ratio)} |`,
      );
    }
    if (p) {
      const limit = goals.memory(r.dim);
      const worst = Math.max(p.bytesPerRow, p.tableBytesPerRow ?? 0);
      lines.push(
        `| pserver memory ≤ ${limit.toFixed(0)} B/row | ${where} | ${worst.toFixed(1)} B | ${verdict(worst <= limit)} |`,
      );
    }
  }
  const notes = results.flatMap((r) =>
    (['pserver', 'redis'] as const).flatMap((name) =>
      (r[name]?.notes ?? []).map((n) => `- ${millions(r.ids)} M ids, dim ${r.dim}, ${name}: ${n}`),
    ),
  );
  if (notes.length) lines.push('', ...notes);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options.systems.includes('redis')) ensureRedisServer();
  const results: ConfigResult[] = [];
  for (const ids of options.ids) {
    const t0 = performance.now();
    const workload = makeWorkload({
      idCount: ids,
      batchSize: options.batch,
      zipfBatches: options.zipfBatches,
      zipfS: 1.05,
      seed: 42,
    });
    const unique =
      workload.zipf.reduce((sum, b) => sum + b.ids.length / 8, 0) / workload.zipf.length;
    console.log(
      `workload: ${ids} ids, ${workload.zipf.length} Zipf batches of ${options.batch} ` +
        `(${unique.toFixed(0)} distinct on average), made in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    for (const dim of options.dims) {
      const result: ConfigResult = { ids, dim };
      for (const name of options.systems) {
        console.log(`  ${name}, dim ${dim}...`);
        result[name] = await (name === 'pserver' ? runPserver : runRedis)(dim, workload, options);
      }
      results.push(result);
    }
  }
  console.log('');
  console.log(report(results, options));
}

main()
  .then(() => stopAllProcesses())
  .catch(async (err: unknown) => {
    console.error(err);
    await stopAllProcesses();
    process.exit(1);
  });
