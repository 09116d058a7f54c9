/**
 * What a change of a running job's shard count costs, measured in one run on a local job (real
 * etcd, one master, real pservers): a job of 2 shards holding `SIZE_MIB` (1024 by default) of
 * dense values and table rows, 4 trainers in this process stepping as fast as acknowledgements
 * come (a small dense push and a few rows each step, on every shard), grown to 3 shards and
 * shrunk back to 2 with `SetDesiredShards`. For each change: the time from the ask to every shard
 * of the new count serving; each trainer's write pause, the step during which its view changed
 * the shard count (the receivers copy the slices that move while the shards serve; then every
 * shard refuses pushes and is handed back, and each receiver serves its share: that step waited
 * for it), and its longest step while the change ran (the copies, and the new shards' first
 * checkpoints, slow steps too); the trainers' throughput during it over the steady state before
 * it; and, as the baseline measured in the same run, the time to write the same state once: a
 * checkpoint of every shard at once.
 *
 *   npx nx run tools:bench-reshard            # SIZE_MIB=256 for a quicker run
 */
import fs from 'node:fs';
import path from 'node:path';
import { connect, type PserverClient as Client } from '@pserver/client';
import { createLogger, defaultLoggerOptions } from '@pserver/logging';
import { LocalCluster, sleep, waitFor } from '@pserver/local-cluster';
import { MasterDriver, PserverDriver } from '@pserver/testing';

const mib = 1 << 20;
const sizeMib = Number(process.env.SIZE_MIB ?? 1024);
const trainers = 4;
const steadyMs = 5_000;
/** Rows of the table (dim 64, float32) and the dense elements that make up the rest. */
const dim = 64;
const rows = Math.floor((sizeMib * mib) / 16 / (dim * 4));
const denseElements = Math.floor((sizeMib * mib - rows * dim * 4) / 4);
const blockSize = 1 << 20;

interface Step {
  trainer: number;
  startMs: number;
  endMs: number;
  /** The trainer's view changed its shard count during the step: the step waited out the hand-over. */
  handOver: boolean;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/**
 * The trainers' small dense push: 8 tensors of 256 elements, each one block, placed on the shards
 * by name (the rows they push spread by bucket).
 */
function smallTensors(fill = 0): Record<string, Float32Array> {
  return Object.fromEntries(
    Array.from({ length: 8 }, (_, k) => [`w${k}`, new Float32Array(256).fill(fill)]),
  );
}

/** Initializes the job's state: `big` (dense), `w0`…`w7` (the trainers' push) and table `emb`. */
async function initialize(client: Client): Promise<void> {
  await client.initParams(
    { big: new Float32Array(denseElements), ...smallTensors() },
    { sgd: {}, learningRate: { base: 0.001 } },
    {
      tables: [
        {
          name: 'emb',
          dim,
          buckets: 1024,
          initializer: { constant: { value: 0 } },
          optimizer: { sgd: {}, learningRate: { base: 0.001 } },
        },
      ],
    },
  );
  // The table's rows, created by pushes of 8,192 rows at a time.
  const batch = 8_192;
  for (let first = 0; first < rows; first += batch) {
    const count = Math.min(batch, rows - first);
    const ids = BigInt64Array.from({ length: count }, (_, k) => BigInt(first + k));
    await client.step((ctx) => ctx.pushRows('emb', ids, new Float32Array(count * dim)));
  }
}

/** The trainers' steps until `stop` resolves: a push to `w0`…`w7` and 4 rows. */
function train(all: Client[], stop: Promise<void>): Promise<Step[]> {
  let stopping = false;
  void stop.then(() => (stopping = true));
  const steps: Step[] = [];
  const gradients = smallTensors(1e-6);
  return Promise.all(
    all.map(async (client, t) => {
      for (let k = 0; !stopping; k++) {
        const startMs = performance.now();
        const countBefore = client.view.shardCount;
        const ids = BigInt64Array.from({ length: 4 }, (_, j) =>
          BigInt((t * 7919 + k * 4 + j) % rows),
        );
        await client.step(async (ctx) => {
          await ctx.pushRows('emb', ids, new Float32Array(4 * dim).fill(1e-6));
          await ctx.sendGrads(gradients);
        });
        steps.push({
          trainer: t,
          startMs,
          endMs: performance.now(),
          handOver: client.view.shardCount !== countBefore,
        });
      }
    }),
  ).then(() => steps);
}

/** Every shard's checkpoint at once: ms, and the bytes of the state they wrote. */
async function checkpointAll(cluster: LocalCluster): Promise<{ ms: number; bytes: number }> {
  const drivers = [...cluster.serving().values()].map((s) => new PserverDriver(s.pserver.address));
  try {
    const bytes = (await Promise.all(drivers.map((d) => d.status()))).reduce(
      (sum, status) => sum + Number(status.totalBytes),
      0,
    );
    const t0 = performance.now();
    await Promise.all(drivers.map((d) => d.saveCheckpoint(600_000)));
    return { ms: performance.now() - t0, bytes };
  } finally {
    for (const d of drivers) d.close();
  }
}

/** Asks for `count` shards and waits until every one serves with no change pending. */
async function reshard(master: MasterDriver, count: number): Promise<number> {
  const t0 = performance.now();
  await master.setDesiredShards(count);
  await waitFor(
    async () => {
      const status = await master.status();
      const view = status.view;
      return !status.reshape &&
        view?.shardCount === count &&
        view.shards.length === count &&
        view.shards.every((s) => s.serving)
        ? true
        : undefined;
    },
    { timeoutMs: 600_000, intervalMs: 20, description: `serving at ${count} shards` },
  );
  return performance.now() - t0;
}

interface Phase {
  steps: Step[];
  fromMs: number;
  toMs: number;
}

const within = ({ steps, fromMs, toMs }: Phase): Step[] =>
  steps.filter((s) => s.endMs > fromMs && s.startMs < toMs);

function throughput(phase: Phase): number {
  const done = phase.steps.filter((s) => s.endMs >= phase.fromMs && s.endMs <= phase.toMs);
  return done.length / ((phase.toMs - phase.fromMs) / 1000);
}

async function main(): Promise<void> {
  const cluster = await LocalCluster.start({
    pservers: 2,
    spares: 1,
    masters: 1,
    // Writing or restoring hundreds of MiB holds a pserver's event loop for seconds on 2 cores: a
    // short lease would fence it on the way (the README says so).
    leaseTtlSeconds: 20,
    blockSize,
    extraPserverArgs: ['--checkpoint-interval-s', '600', '--max-message-mb', '64'],
    // LOG_DIR=<dir> keeps every process's output.
    logDir: process.env.LOG_DIR,
  });
  const master = new MasterDriver(cluster.masters[0]!.address);
  const all: Client[] = [];
  try {
    await cluster.waitUntilServed();
    // With LOG_DIR, the trainers' lines too (their stale views and re-runs), in trainers.log.
    const logger = process.env.LOG_DIR
      ? createLogger({
          ...defaultLoggerOptions,
          name: 'trainer',
          format: 'json',
          destination: fs.createWriteStream(path.join(process.env.LOG_DIR, 'trainers.log')),
        })
      : undefined;
    for (let t = 0; t < trainers; t++)
      all.push(
        await connect({
          master: cluster.masterAddresses,
          name: `bench-${t}`,
          logger: logger?.child({ trainer: t }),
        }),
      );
    const setupStart = performance.now();
    await initialize(all[0]!);
    // The other trainers learn the model from the shards (they hold no copy of it).
    for (const client of all.slice(1)) await client.listTables();
    console.log(
      `job: 2 shards, ${sizeMib} MiB (${denseElements} dense elements, ${rows} rows of ${dim}), initialized in ${((performance.now() - setupStart) / 1000).toFixed(1)} s`,
    );
    const copy = await checkpointAll(cluster);
    console.log(
      `baseline: a checkpoint of every shard at once, ${(copy.bytes / mib).toFixed(0)} MiB: ${(copy.ms / 1000).toFixed(2)} s`,
    );
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const training = train(all, stopped);
    const rows_: string[] = [];
    const marks: { label: string; steady: [number, number]; move: [number, number] }[] = [];
    for (const count of [3, 2]) {
      const steadyFrom = performance.now();
      await sleep(steadyMs);
      const askedAt = performance.now();
      const moveMs = await reshard(master, count);
      marks.push({
        label: `${count === 3 ? '2 → 3' : '3 → 2'}`,
        steady: [steadyFrom, askedAt],
        move: [askedAt, askedAt + moveMs],
      });
      // Trainers step again at the new count before the next phase is measured.
      await sleep(1_000);
    }
    stop();
    const steps = await training;
    console.log(
      `\nper change (${trainers} trainers; p50 / p99 / max over the trainers of each one's write pause — the step during which its view changed the shard count, which waited out the hand-over — and of its longest step while the change ran):`,
    );
    const ms = (sorted: number[]): string =>
      `${quantile(sorted, 0.5).toFixed(0)} / ${quantile(sorted, 0.99).toFixed(0)} / ${(sorted.at(-1) ?? NaN).toFixed(0)} ms`;
    const iso = (at: number): string => new Date(performance.timeOrigin + at).toISOString();
    for (const m of marks) {
      const steady: Phase = { steps, fromMs: m.steady[0], toMs: m.steady[1] };
      const move: Phase = { steps, fromMs: m.move[0], toMs: m.move[1] };
      const steadyLatency = within(steady)
        .map((s) => s.endMs - s.startMs)
        .sort((a, b) => a - b);
      const byTrainer = (pick: (steps: Step[]) => Step | undefined): Step[] =>
        Array.from({ length: trainers }, (_, t) =>
          pick(within(move).filter((s) => s.trainer === t)),
        ).filter((s): s is Step => s !== undefined);
      const longestOf = (all: Step[]): Step | undefined =>
        all.reduce<Step | undefined>(
          (a, s) => (!a || s.endMs - s.startMs > a.endMs - a.startMs ? s : a),
          undefined,
        );
      const handOvers = byTrainer((all) => longestOf(all.filter((s) => s.handOver)));
      const longest = byTrainer(longestOf);
      const sorted = (all: Step[]): number[] =>
        all.map((s) => s.endMs - s.startMs).sort((a, b) => a - b);
      // With LOG_DIR, both in wall-clock time, beside the processes' logs.
      for (const [what, all] of [
        ['write pause', handOvers],
        ['longest step', longest],
      ] as const)
        for (const step of all)
          logger?.info(`the trainer's ${what} in the change`, {
            change: m.label,
            trainer: step.trainer,
            began: iso(step.startMs),
            ended: iso(step.endMs),
            ms: Math.round(step.endMs - step.startMs),
          });
      const moveMs = m.move[1] - m.move[0];
      rows_.push(
        `| ${m.label} | ${(copy.bytes / mib).toFixed(0)} MiB | ${(moveMs / 1000).toFixed(2)} s | ${ms(sorted(handOvers))} | ${ms(sorted(longest))} | ${quantile(steadyLatency, 0.5).toFixed(1)} / ${quantile(steadyLatency, 0.99).toFixed(1)} ms | ${(throughput(move) / throughput(steady)).toFixed(2)}× | ${(moveMs / copy.ms).toFixed(2)}× |`,
      );
    }
    console.log(
      '| change | job state | ask → serving at the new count | write pause p50 / p99 / max | longest step p50 / p99 / max | steady step p50 / p99 | steps/s during the change / steady | change time / one checkpoint of every shard |',
    );
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const row of rows_) console.log(row);
  } finally {
    master.close();
    await Promise.all(all.map((c) => c.close().catch(() => undefined)));
    await cluster.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
