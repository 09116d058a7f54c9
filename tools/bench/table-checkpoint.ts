/**
 * Incremental checkpoints of a large sparse table by a real pserver process: a table of 10 M rows
 * at dim 16 (row-wise Adagrad: 17 float32 a row) filled through SendGrads, a full checkpoint, then
 * 1 % of the rows pushed and a delta; the bytes of each, the time the pserver took to copy the
 * table (pushes wait for that copy only), the longest push while the full one was written, and a
 * new process restoring the chain. Next to it, in the same run on the same filesystem:
 * `dd bs=4M conv=fsync` of the full file's size and a plain read of that file. A second full
 * checkpoint shows the steady state (the first one also faults in its snapshot memory).
 *
 *   npx nx run tools:bench-table-checkpoint [-- --rows 10000000 --dir <directory>]
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TableSpec } from '@pserver/proto';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  workspaceRoot,
} from '@pserver/testing';
import { ddAndRead, gbps, median, restoreByNewProcess } from './disk-baselines';

const flag = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1]! : fallback;
};
const rows = Number(flag('--rows', '10000000'));
const dim = 16;
const perPush = 100_000;
const touched = Math.floor(rows / 100);

function rssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Ids of keys first, first + every, …, spread over the int64 range by an odd multiplier. */
function idsOf(first: number, n: number, every = 1): Buffer {
  const ids = new BigInt64Array(n);
  for (let k = 0; k < n; k++)
    ids[k] = BigInt.asIntN(64, BigInt(first + k * every) * 0x9e3779b97f4a7c15n);
  return bytesOf(ids);
}

async function main(): Promise<void> {
  const base = flag('--dir', path.join(workspaceRoot(), 'tmp', 'bench-table-checkpoint'));
  fs.rmSync(base, { recursive: true, force: true });
  fs.mkdirSync(base, { recursive: true });
  const checkpointDir = path.join(base, 'checkpoints');
  const pserver = await startPserverProcess(
    ['--max-message-mb', '128', '--checkpoint-deltas', '1'],
    { checkpointDir, name: 'bench-table-pserver', timeoutMs: 120_000 },
  );
  const driver = new PserverDriver(pserver.address, { timeoutMs: 600_000 });
  const epoch = await driver.epoch();
  const context = { trainerId: 1, shardEpoch: epoch };
  const spec: TableSpec = {
    name: 'emb',
    dim,
    buckets: 1 << 16,
    initializer: { uniform: { low: -0.01, high: 0.01 }, seed: 1 },
    optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.05 } },
    expectedRows: rows,
  };
  await driver.initTable(context, spec);
  await driver.finishInitParams(context);
  const rssBefore = rssBytes(pserver.process.pid);

  let step = 0;
  const push = (first: number, n: number, every = 1) =>
    driver.sendGrads(
      { ...context, step: ++step },
      [],
      [
        {
          table: 'emb',
          ids: idsOf(first, n, every),
          grads: bytesOf(new Float32Array(n * dim).fill(0.01)),
        },
      ],
    );
  const fillStart = performance.now();
  for (let first = 0; first < rows; first += perPush)
    await push(first, Math.min(perPush, rows - first));
  const fillSeconds = (performance.now() - fillStart) / 1000;
  const rssFilled = rssBytes(pserver.process.pid);
  const status = await driver.status();

  const save = async (): Promise<number> => {
    const start = performance.now();
    await new Promise((resolve, reject) =>
      driver.client.saveCheckpoint({}, { deadline: Date.now() + 600_000 }, (err, reply) =>
        err ? reject(err) : resolve(reply),
      ),
    );
    return (performance.now() - start) / 1000;
  };
  // A checkpoint with small pushes of existing rows running: their latencies.
  const saveWithPushes = async (): Promise<{ seconds: number; during: number[] }> => {
    let saving = true;
    const during: number[] = [];
    const pushing = (async () => {
      while (saving) {
        const start = performance.now();
        await push(0, 1000);
        during.push(performance.now() - start);
      }
    })();
    const seconds = await save();
    saving = false;
    await pushing;
    return { seconds, during };
  };
  // 1 % of the rows, every 100th key of the fill.
  const touch = async (): Promise<void> => {
    for (let first = 0; first < touched; first += perPush)
      await push(first * 100, Math.min(perPush, touched - first), 100);
  };
  // With --checkpoint-deltas 1: full (its snapshot memory new), delta, full (the memory reused),
  // delta; the restore reads the last two.
  const firstFull = await saveWithPushes();
  await touch();
  await save();
  const secondFull = await saveWithPushes();
  await touch();
  const deltaSeconds = await save();
  const commits = pserver.process
    .jsonLines()
    .filter((e) => e.msg === 'checkpoint committed' && e.reason === 'request');
  if (commits.map((e) => e.kind).join() !== 'full,delta,full,delta')
    throw new Error(`unexpected checkpoints: ${commits.map((e) => e.kind).join()}`);
  const [full1, , full, delta] = commits as [
    Record<string, unknown>,
    unknown,
    Record<string, unknown>,
    Record<string, unknown>,
  ];
  driver.close();
  await pserver.process.stop({ signal: 'SIGKILL' });

  const fullBytes = Number(full.bytes);
  const count = Math.ceil(fullBytes / (4 << 20));
  const { ddSeconds, readSeconds, coldRead } = ddAndRead(base, count);
  const { recovered, coldRestore } = await restoreByNewProcess(
    checkpointDir,
    'bench-table-restore',
  );
  fs.rmSync(base, { recursive: true, force: true });

  const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
  const table = status.tables[0]!;
  console.log(`table of ${rows} rows, dim ${dim}, row-wise Adagrad, in ${base}`);
  console.log(
    `fill: ${(rows / fillSeconds / 1e6).toFixed(2)} M new rows/s through SendGrads (${perPush} a push); ` +
      `RSS +${mb(rssFilled - rssBefore)} = ${((rssFilled - rssBefore) / rows).toFixed(1)} bytes/row ` +
      `(table's own count ${table.bytesPerRow} bytes/row, values and state ${4 * (dim + 1)})`,
  );
  const pauses = ({ during }: { during: number[] }): string =>
    `pushes of 1,000 rows during it: median ${median(during).toFixed(1)} ms, longest ${Math.max(...during).toFixed(0)} ms (${during.length})`;
  console.log(
    `first full checkpoint (snapshot memory new): ${mb(Number(full1.bytes))}, copy while pushes wait ${full1.heldMs} ms, ` +
      `call ${firstFull.seconds.toFixed(2)} s; ${pauses(firstFull)}`,
  );
  console.log(
    `next full checkpoint: ${mb(fullBytes)}, copy while pushes wait ${full.heldMs} ms, written in ${full.totalMs} ms ` +
      `(${gbps(fullBytes, (Number(full.totalMs) - Number(full.copyMs)) / 1000)} after the copy; dd ${gbps(count * (4 << 20), ddSeconds)}), ` +
      `call ${secondFull.seconds.toFixed(2)} s; ${pauses(secondFull)}`,
  );
  console.log(
    `delta after pushing ${touched} rows (1 %): ${mb(Number(delta.bytes))} = 1/${(fullBytes / Number(delta.bytes)).toFixed(1)} of the full one, ` +
      `copy while pushes wait ${delta.heldMs} ms, written in ${delta.totalMs} ms, call ${deltaSeconds.toFixed(2)} s`,
  );
  console.log(
    `restore of full + delta by a new process${coldRestore ? ' (cold cache)' : ' (page cache)'}: ${(Number(recovered.ms) / 1000).toFixed(2)} s ` +
      `(${gbps(Number(recovered.bytes), Number(recovered.ms) / 1000)}; plain read${coldRead ? ', cold' : ''} ${gbps(count * (4 << 20), readSeconds)})`,
  );
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopAllProcesses();
  process.exit(1);
});
