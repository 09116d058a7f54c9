/**
 * Checkpoint write and restore of a 1 GiB shard (256 float32 blocks of 4 MiB) by a real pserver
 * process, next to `dd if=/dev/zero bs=4M count=256 conv=fsync` and a plain read of the same
 * file, measured in the same run on the same filesystem; and the longest SendGrads pause while a
 * checkpoint is written, next to the time the pserver took to copy the shard in memory.
 *
 *   npx nx run tools:bench-checkpoint [-- --dir <directory on the disk to measure>]
 *
 * As root, the page cache is dropped before each read, so reads come from the disk.
 */
import { TensorMemory } from '@pserver/optimizer';
import fs from 'node:fs';
import path from 'node:path';
import {
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  workspaceRoot,
} from '@pserver/testing';
import { ddAndRead, gbps, median, restoreByNewProcess } from './disk-baselines';

const mib = 1024 * 1024;
const blocks = 256;
const blockBytes = 4 * mib;
const totalBytes = blocks * blockBytes;

function seconds<T>(fn: () => T): [T, number] {
  const start = performance.now();
  const result = fn();
  return [result, (performance.now() - start) / 1000];
}

async function main(): Promise<void> {
  const dirFlag = process.argv.indexOf('--dir');
  const base =
    dirFlag > 0
      ? process.argv[dirFlag + 1]!
      : path.join(workspaceRoot(), 'tmp', 'bench-checkpoint');
  fs.rmSync(base, { recursive: true, force: true });
  fs.mkdirSync(base, { recursive: true });

  // Baselines: dd with fsync, then a plain read of its file.
  const { ddSeconds, readSeconds, coldRead: cold } = ddAndRead(base, blocks);
  // What a process restoring 1 GiB pays before reading a byte: faulting in new WebAssembly memory.
  const [, faultSeconds] = seconds(() => new TensorMemory().allocate([totalBytes / 4], 'all'));

  // A pserver with a 1 GiB shard.
  const checkpointDir = path.join(base, 'checkpoints');
  const pserver = await startPserverProcess(['--max-message-mb', '64'], {
    checkpointDir,
    name: 'bench-pserver',
  });
  const driver = new PserverDriver(pserver.address);
  const epoch = await driver.epoch();
  const context = { trainerId: 1, shardEpoch: epoch };
  const content = bytesOf(new Float32Array(blockBytes / 4).fill(0.5));
  for (let k = 0; k < blocks; k++) {
    await driver.initParam(
      context,
      { name: `w@${k}`, elementType: 'ELEMENT_TYPE_FLOAT32', content },
      { learningRate: { base: 0.01 } },
    );
  }
  await driver.finishInitParams(context);

  // Pushes of one 4 MiB block, back to back, while a checkpoint is written: their latencies.
  const gradient = bytesOf(new Float32Array(blockBytes / 4).fill(1e-6));
  let step = 0;
  const push = async (): Promise<number> => {
    const start = performance.now();
    await driver.sendGrads({ ...context, step: ++step }, [
      { name: 'w@0', elementType: 'ELEMENT_TYPE_FLOAT32', content: gradient },
    ]);
    return performance.now() - start;
  };
  const quiet: number[] = [];
  for (let i = 0; i < 20; i++) quiet.push(await push());
  // Three checkpoints: the first also faults in the snapshot memory, the second reuses it (both
  // with pushes running, to see their pauses), the third runs alone (the write speed).
  const runs: { seconds: number; during: number[]; log: Record<string, unknown> }[] = [];
  for (let run = 0; run < 3; run++) {
    let saving = run < 2;
    const during: number[] = [];
    const pushing = (async () => {
      while (saving) during.push(await push());
    })();
    const saveStart = performance.now();
    await new Promise((resolve, reject) =>
      driver.client.saveCheckpoint({}, { deadline: Date.now() + 600_000 }, (err, reply) =>
        err ? reject(err) : resolve(reply),
      ),
    );
    const seconds = (performance.now() - saveStart) / 1000;
    saving = false;
    await pushing;
    const logs = pserver.process
      .jsonLines()
      .filter((e) => e.msg === 'checkpoint committed' && e.reason === 'request');
    runs.push({ seconds, during, log: logs[run]! });
  }
  driver.close();
  await pserver.process.stop({ signal: 'SIGKILL' });

  // Restore: a new process recovers the shard from the checkpoint.
  const { recovered, coldRestore } = await restoreByNewProcess(
    checkpointDir,
    'bench-pserver-restore',
  );
  fs.rmSync(base, { recursive: true, force: true });

  const restoreSeconds = Number(recovered.ms) / 1000;
  console.log(`1 GiB shard (${blocks} float32 blocks of 4 MiB), in ${base}`);
  console.log(`dd bs=4M count=${blocks} conv=fsync: ${gbps(totalBytes, ddSeconds)}`);
  console.log(
    `plain read of that file${cold ? ' (cold cache)' : ' (page cache)'}: ${gbps(totalBytes, readSeconds)}`,
  );
  console.log(
    `first touch of 1 GiB of new tensor memory (WebAssembly): ${(faultSeconds * 1000).toFixed(0)} ms`,
  );
  runs.forEach(({ seconds, during, log }, i) => {
    const fileBytes = Number(log.bytes);
    const writeSeconds = Number(log.totalMs) / 1000;
    const pushes =
      during.length === 0
        ? 'no pushes'
        : `SendGrads 4 MiB median ${median(quiet).toFixed(1)} ms quiet, ${median(during).toFixed(1)} ms during, ` +
          `longest ${Math.max(...during).toFixed(1)} ms (${during.length} pushes)`;
    const ratio = fileBytes / writeSeconds / (totalBytes / ddSeconds);
    console.log(
      `checkpoint ${i + 1}: ${gbps(fileBytes, writeSeconds)} (${ratio.toFixed(2)}x dd), copy ${log.copyMs} ms (pushes held ${log.heldMs} ms), ` +
        `call ${seconds.toFixed(2)} s; ${pushes}`,
    );
  });
  console.log(
    `restore${coldRestore ? ' (cold cache)' : ' (page cache)'}: ${gbps(totalBytes, restoreSeconds)} ` +
      `(${(totalBytes / restoreSeconds / (totalBytes / readSeconds)).toFixed(2)}x plain read), ${restoreSeconds.toFixed(2)} s`,
  );
}

main().catch(async (err: unknown) => {
  console.error(err);
  await stopAllProcesses();
  process.exit(1);
});
