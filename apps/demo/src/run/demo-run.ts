import fs from 'node:fs';
import path from 'node:path';
import { connect } from '@pserver/client';
import { sleep } from '@pserver/local-cluster';
import { loadDigits, splitDigits, writeCsvFiles } from '../digits/digits';
import { hyperparameters } from '../model/hyperparameters';
import { accuracy, initialParams, paramNames, type Sample } from '../model/mlp';
import { chaosLine } from '../view/chaos-line';
import { renderReport } from '../view/report';
import type { DemoSnapshot, DemoView } from '../view/demo-view';
import { Chaos, type Failure } from './chaos';
import { DemoCluster } from './demo-cluster';
import type { TrainerSpec } from './trainer-programs';
import { TrainingProgress } from './training-progress';

export interface DemoOptions {
  pservers: number;
  trainers: TrainerSpec[];
  passes: number;
  seed: number;
  chaos: boolean;
  /** Where the data, logs, events and report go. */
  outDir: string;
  /** Held-out digits for the test accuracy. */
  testSize: number;
  /** A generous bound on the whole run: past it, the demo stops with an error. */
  timeoutMs: number;
}

export interface DemoResult {
  accuracy: number;
  failures: Failure[];
  durationMs: number;
  /** The longest time no trainer applied a step (see `TrainingProgress.longestPause`). */
  longestPauseMs: number;
  reportPath: string;
}

/**
 * The demo, start to end: split the digits and write the training files, start the cluster and
 * the trainers, inject the failures, wait for the trainers, measure the test accuracy, stop every
 * process and write the report. Every event also goes to `<outDir>/events.jsonl`.
 */
export async function runDemo(
  options: DemoOptions,
  makeView: (trainers: string[], samplesPerPass: number) => DemoView,
  signal: AbortSignal,
): Promise<DemoResult> {
  const startedAt = Date.now();
  fs.mkdirSync(options.outDir, { recursive: true });
  const eventsFile = path.join(options.outDir, 'events.jsonl');
  const { train, test } = splitDigits(loadDigits(), options.testSize, options.seed);
  const dataDir = path.join(options.outDir, 'data');
  writeCsvFiles(dataDir, train, 4);

  const names = options.trainers.map((t) => t.name);
  const progress = new TrainingProgress(names, options.passes, train.length);
  const view = makeView(names, train.length);
  const record = (event: Record<string, unknown>, text?: string): void => {
    const at = Date.now();
    fs.appendFileSync(eventsFile, JSON.stringify({ t: at, ...event }) + '\n');
    if (text) view.note(text, at);
  };
  record(
    { kind: 'data', train: train.length, test: test.length, seed: options.seed },
    `${train.length} digits to train on in ${dataDir}, ${test.length} held out for the test`,
  );

  let demo: DemoCluster | undefined;
  try {
    demo = await DemoCluster.start({
      ...options,
      data: path.join(dataDir, 'train-*.csv'),
      logDir: path.join(options.outDir, 'logs'),
      onLine: (name, line) => progress.onTrainerLine(name, line),
    });
    const cluster = demo;
    // Ctrl-C is acted on between phases and at each tick of the training loop.
    const interrupted = (): void => {
      if (signal.aborted) throw new Error('interrupted');
    };
    interrupted();
    demo.startTrainers();
    for (const p of demo.processes())
      record({ kind: 'started', name: p.name, pid: p.pid }, `started ${p.name} (pid ${p.pid})`);

    const chaos = new Chaos(demo.cluster, progress, options.seed % options.pservers, (event) =>
      record({ kind: event.kind, ...event.failure }, chaosLine(event)),
    );
    let passesOver = 0;
    while (!progress.allFinished()) {
      interrupted();
      if (Date.now() - startedAt > options.timeoutMs)
        throw new Error(`the demo did not finish within ${options.timeoutMs / 1000} s`);
      const crashed = demo.trainers.find((t) => !t.running && t.exitStatus?.code !== 0);
      if (crashed) throw crashed.failure('the trainer failed');
      if (options.chaos) chaos.tick();
      while (passesOver < options.passes && progress.currentPass() > passesOver) {
        record({ kind: 'pass over', pass: passesOver }, `pass ${passesOver + 1} over`);
        passesOver++;
      }
      view.render(snapshot(cluster, progress, startedAt));
      await sleep(100);
    }
    view.render(snapshot(cluster, progress, startedAt));
    const failed = [...progress.trainers.values()].find((t) => t.phase === 'failed');
    if (failed) throw new Error(`${failed.name} failed: ${failed.error}`);
    record({ kind: 'pass over', pass: options.passes - 1 }, 'training done');
    for (const t of progress.trainers.values())
      record({ kind: 'trainer', name: t.name, steps: t.steps, samples: t.samplesByPass });
    const pause = progress.longestPause();
    record({ kind: 'longest pause', ...pause });

    interrupted();
    const measured = await testAccuracy(demo, options.seed, test);
    interrupted();
    record(
      { kind: 'accuracy', accuracy: measured },
      `test accuracy ${(measured * 100).toFixed(1)} % on ${test.length} held-out digits`,
    );
    const finishedAt = Date.now();
    const reportPath = path.join(options.outDir, 'demo-report.html');
    fs.writeFileSync(
      reportPath,
      renderReport({
        title: 'pserver demo: MNIST digits on a fault-tolerant cluster',
        settings: {
          pservers: options.pservers,
          trainers: options.trainers.map((t) => t.name).join(' '),
          passes: options.passes,
          seed: options.seed,
          chaos: options.chaos,
        },
        startedAt,
        finishedAt,
        steps: progress.steps,
        failures: chaos.failures,
        accuracy: measured,
      }),
    );
    return {
      accuracy: measured,
      failures: chaos.failures,
      durationMs: finishedAt - startedAt,
      longestPauseMs: pause?.ms ?? 0,
      reportPath,
    };
  } finally {
    view.close();
    if (demo) await demo.stop();
    record({ kind: 'stopped' });
  }
}

/** The test accuracy of the weights on the pservers, read by a client of its own. */
async function testAccuracy(demo: DemoCluster, seed: number, test: Sample[]): Promise<number> {
  const client = await connect({ master: demo.cluster.masterAddresses, name: 'evaluator' });
  try {
    // Declares the tensors; they are initialized already, so nothing is written.
    await client.initParams(initialParams(hyperparameters.hidden, seed));
    return accuracy(await client.getParams(paramNames, Float32Array), test);
  } finally {
    await client.close();
  }
}

function snapshot(demo: DemoCluster, progress: TrainingProgress, startedAt: number): DemoSnapshot {
  const { cluster } = demo;
  const leader = cluster.leadingMaster();
  return {
    now: Date.now(),
    startedAt,
    progress,
    shards: [...cluster.serving()]
      .sort(([a], [b]) => a - b)
      .map(([index, { pserver, epoch }]) => ({
        index,
        name: pserver.process.name,
        epoch,
        restored: pserver.process.lastLog('recovered the shard from a checkpoint') !== undefined,
      })),
    masters: cluster.masters.map((m) => ({
      name: m.process.name,
      state: !m.process.running ? 'killed' : m === leader ? 'leading' : 'standby',
    })),
  };
}
