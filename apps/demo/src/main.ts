// `npm run demo`: the digits MLP trained on a local fault-tolerant cluster, with a pserver and the
// leading master killed halfway; prints the test accuracy and the time each failure cost.
import path from 'node:path';
import { Command } from 'commander';
import { positive } from './cli-options';
import { demoStallMs } from './run/demo-cluster';
import { defaultOutDir } from './run/out-dir';
import { runDemo } from './run/demo-run';
import { lineupOf, withTrainerOptions, type TrainerCounts } from './run/trainer-programs';
import { PlainView } from './view/plain-view';
import { TerminalView } from './view/terminal-view';

/** The accuracy the README promises (measured over several seeds with chaos on). */
const accuracyFloor = 0.88;

const options = withTrainerOptions(
  new Command('demo')
    .description(
      'Trains a digit classifier on a local cluster (etcd, 2 masters, pservers, a spare, trainers)\n' +
        'and kills a pserver and the leading master halfway.',
    )
    .option('--pservers <n>', 'shards (one pserver each; one more waits as a spare)', positive, 3),
)
  .option('--passes <n>', 'passes over the training digits (default 4, 2 with --ci)', positive)
  .option('--seed <n>', 'seed of the data split, the initial weights and the chaos', positive, 1)
  .option('--no-chaos', 'kill nothing')
  .option('--ci', 'a shorter run with plain output, for scripts and CI')
  .option('--out <dir>', 'where data, logs, events and the report go (default tmp/demo/<time>)')
  .parse()
  .opts<
    TrainerCounts & {
      pservers: number;
      passes?: number;
      seed: number;
      chaos: boolean;
      ci?: boolean;
      out?: string;
    }
  >();

async function main(): Promise<number> {
  const interrupted = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => interrupted.abort());
  const outDir = path.resolve(options.out ?? defaultOutDir());
  const interactive = !options.ci && process.stdout.isTTY;
  const result = await runDemo(
    {
      pservers: options.pservers,
      trainers: lineupOf(options),
      passes: options.passes ?? (options.ci ? 2 : 4),
      seed: options.seed,
      chaos: options.chaos,
      outDir,
      testSize: 2000,
      timeoutMs: 10 * 60_000,
    },
    (trainers, samplesPerPass) =>
      interactive ? new TerminalView(trainers, samplesPerPass) : new PlainView(),
    interrupted.signal,
  );
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    `\nTest accuracy ${(result.accuracy * 100).toFixed(1)} % after ${seconds(result.durationMs)}.`,
  );
  for (const f of result.failures)
    console.log(
      `  kill -9 ${f.victim}: ${f.takenOverBy ?? 'nobody'} took over after ${f.takenOverAt ? seconds(f.takenOverAt - f.killedAt) : '-'}; ` +
        `time lost ${f.resumedAt ? seconds(f.resumedAt - f.killedAt) : 'unknown (not resumed)'}`,
    );
  const stalled = result.longestPauseMs >= demoStallMs;
  console.log(
    `Longest pause in training: ${seconds(result.longestPauseMs)}` +
      (stalled ? ` (stalled: ${seconds(demoStallMs)} or more)` : ''),
  );
  console.log(`Report: ${result.reportPath}\nLogs:   ${path.join(outDir, 'logs')}`);
  const unrecovered = result.failures.filter((f) => f.resumedAt === undefined);
  if (result.accuracy < accuracyFloor || unrecovered.length > 0 || stalled) {
    console.error(
      `The demo fell short: accuracy floor ${accuracyFloor * 100} %` +
        (unrecovered.length
          ? `; not recovered from ${unrecovered.map((f) => f.victim).join(', ')}`
          : '') +
        (stalled ? `; training stalled for ${seconds(result.longestPauseMs)}` : ''),
    );
    return 1;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(err instanceof Error && err.message === 'interrupted' ? 130 : 1);
  },
);
