/**
 * Step throughput of the consistency modes, side by side in one run: 4 trainer processes train
 * one model (1 MiB of float32 over 2 standalone pservers) for the same number of steps, each
 * step a read of the whole model, a compute of 10–30 ms (a jittered sleep, different per trainer,
 * so that someone is always the straggler), and a push of the whole model — once per mode:
 * ASYNC (the baseline), SYNC and SSP with s = 1 and s = 4. Printed per mode: the job's steps per
 * second and its ratio to ASYNC, the time per step spent in reads, and of it the time parked at
 * the barrier (the pservers' `pserver_parked_seconds_total`, per step: a mode's wait).
 *
 *   npx nx run tools:bench-consistency        (STEPS=200 ROUNDS=3 to change the defaults)
 */
import os from 'node:os';
import path from 'node:path';
import {
  spawnNode,
  startPserverProcess,
  stopAllProcesses,
  type ManagedProcess,
} from '@pserver/testing';

const trainers = 4;
const shards = 2;
const elements = 1 << 18;
const computeMs = 20;
const steps = Number(process.env.STEPS ?? 100);
const rounds = Number(process.env.ROUNDS ?? 2);
const modes = ['async', 'sync', 'ssp:1', 'ssp:4'];

interface TrainerReport {
  trainerId: number;
  steps: number;
  totalMs: number;
  readMs: number;
}

interface ModeResult {
  stepsPerSecond: number;
  readMsPerStep: number;
  parkedMsPerStep: number;
}

async function runMode(mode: string): Promise<ModeResult> {
  const consistency =
    mode === 'async' ? [] : ['--consistency', mode, '--sync-trainers', String(trainers)];
  const pservers = await Promise.all(
    Array.from({ length: shards }, (_, i) =>
      startPserverProcess(
        ['--index', String(i), '--shards', String(shards), '--metrics-port', '0', ...consistency],
        { name: `bench-${mode}-${i}` },
      ),
    ),
  );
  const addresses = pservers.map((p) => p.address).join(',');
  const script = path.join(__dirname, 'consistency-trainer.js');
  const children = Array.from({ length: trainers }, (_, i) =>
    spawnNode(
      script,
      [addresses, String(i + 1), String(steps), String(elements), String(computeMs)],
      { name: `bench-trainer-${i + 1}` },
    ),
  );
  const reports: TrainerReport[] = [];
  for (const child of children) {
    const status = await child.exited;
    if (status.code !== 0) throw child.failure(`exited ${String(status.code ?? status.signal)}`);
    reports.push(
      JSON.parse(child.lines.find((l) => l.startsWith('{"trainerId"'))!) as TrainerReport,
    );
  }
  const parkedSeconds = await Promise.all(pservers.map((p) => parkedSecondsOf(p.process)));
  await Promise.all(pservers.map((p) => p.process.stop()));
  const totalSteps = reports.reduce((sum, r) => sum + r.steps, 0);
  const wallMs = Math.max(...reports.map((r) => r.totalMs));
  return {
    stepsPerSecond: (totalSteps / wallMs) * 1000,
    readMsPerStep: reports.reduce((sum, r) => sum + r.readMs, 0) / totalSteps,
    // A step's calls wait on every shard at once: the shards' mean is the step's wait.
    parkedMsPerStep: (parkedSeconds.reduce((a, b) => a + b, 0) * 1000) / shards / totalSteps,
  };
}

/** `pserver_parked_seconds_total` from the pserver's metrics endpoint. */
async function parkedSecondsOf(pserver: ManagedProcess): Promise<number> {
  const address = String(pserver.lastLog('metrics listening')?.address);
  const text = await (await fetch(`http://${address}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('pserver_parked_seconds_total '));
  return Number(line?.split(' ')[1] ?? NaN);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  console.log(
    `${trainers} trainers × ${steps} steps, ${(elements * 4) / 2 ** 20} MiB model on ${shards} shards, ` +
      `compute ${computeMs / 2}–${(computeMs * 3) / 2} ms per step; ${rounds} rounds, medians; ` +
      `${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`,
  );
  const results = new Map<string, ModeResult[]>(modes.map((m) => [m, []]));
  // Rounds interleave the modes, so that a slow moment of the machine does not land on one.
  for (let round = 0; round < rounds; round++)
    for (const mode of modes) results.get(mode)!.push(await runMode(mode));
  const summary = new Map(
    modes.map((mode) => {
      const runs = results.get(mode)!;
      return [
        mode,
        {
          stepsPerSecond: median(runs.map((r) => r.stepsPerSecond)),
          readMsPerStep: median(runs.map((r) => r.readMsPerStep)),
          parkedMsPerStep: median(runs.map((r) => r.parkedMsPerStep)),
        },
      ];
    }),
  );
  const baseline = summary.get('async')!;
  console.log('| mode | steps/s (job) | × ASYNC | read ms/step | parked at the barrier ms/step |');
  console.log('| ---- | ------------: | ------: | -----------: | ----------------------------: |');
  for (const [mode, r] of summary)
    console.log(
      `| ${mode.toUpperCase()} | ${r.stepsPerSecond.toFixed(1)} | ${(r.stepsPerSecond / baseline.stepsPerSecond).toFixed(2)} | ` +
        `${r.readMsPerStep.toFixed(1)} | ${r.parkedMsPerStep.toFixed(1)} |`,
    );
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => stopAllProcesses());
