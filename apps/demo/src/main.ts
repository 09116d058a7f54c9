// `npm run demo`: the digits MLP (or, with `--model ctr`, the click-through-rate model of PyTorch
// trainers) trained on a local fault-tolerant cluster, grown by a shard while it trains, then with
// a pserver and the leading master killed; prints how good the model is and what each change cost.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Command, Option } from 'commander';
import type { JobConsistency } from '@pserver/coordination';
import { workspaceRoot } from '@pserver/local-cluster';
import { consistencyOption, count, positive } from './cli-options';
import { clickLogs, CtrDemo } from './ctr/ctr-demo';
import { DigitsDemo } from './digits/digits-demo';
import { demoStallMs } from './run/demo-cluster';
import type { DemoModel } from './run/demo-model';
import { defaultOutDir } from './run/out-dir';
import { runDemo } from './run/demo-run';
import { lineupOf, withTrainerOptions, type TrainerCounts } from './run/trainer-programs';
import { growthSummary } from './view/chaos-line';
import { PlainView } from './view/plain-view';
import { TerminalView } from './view/terminal-view';

const command = withTrainerOptions(
  new Command('demo')
    .description(
      'Trains a model on a local cluster (etcd, 2 masters, pservers, a spare, trainers), grows it\n' +
        'by one shard while it trains, then kills a pserver and the leading master: MNIST digits by\n' +
        'default, or a click-through-rate model of PyTorch trainers with --model ctr.',
    )
    .addOption(
      new Option('--model <name>', 'what to train: mnist digits, or ctr (PyTorch trainers)')
        .choices(['mnist', 'ctr'])
        .default('mnist'),
    )
    .option(
      '--pservers <n>',
      'shards to start with (one pserver each; one more waits as a spare); the chaos grows them by one',
      positive,
      3,
    )
    .option(
      '--replicas <n>',
      'replicas of each shard (one more pserver per shard each): a failover promotes one and loses no acknowledged update',
      count,
      0,
    ),
)
  .addOption(consistencyOption())
  .option('--passes <n>', 'passes over the training data (mnist: 4, 2 with --ci; ctr: 1)', positive)
  .option('--seed <n>', 'seed of the data split, the initial weights and the chaos', positive, 1)
  .option('--no-chaos', 'kill nothing, grow nothing')
  .option('--no-grow', 'keep the shard count (the kills still come)')
  .option('--ci', 'a shorter run with plain output, for scripts and CI')
  .option('--out <dir>', 'where data, logs, events and the report go (default tmp/demo/<time>)')
  .parse();
const options = command.opts<
  TrainerCounts & {
    model: 'mnist' | 'ctr';
    pservers: number;
    replicas: number;
    consistency: JobConsistency;
    passes?: number;
    seed: number;
    chaos: boolean;
    grow: boolean;
    ci?: boolean;
    out?: string;
  }
>();

/** The model the flags ask for, with the number of passes it trains. */
function chosenModel(): { model: DemoModel; passes: number } {
  if (options.model === 'mnist') {
    const passes = options.passes ?? (options.ci ? 2 : 4);
    const trainers = lineupOf(options);
    return {
      model: new DigitsDemo({ trainers, passes, seed: options.seed, testSize: 2000 }),
      passes,
    };
  }
  if (options.pythonTrainers || options.goTrainers)
    command.error(
      "--model ctr: its trainers are PyTorch processes; say how many with '--trainers'",
    );
  // Debian's PyTorch and the Python client's packages (installed when root).
  const setup = spawnSync(
    'bash',
    [path.join(workspaceRoot(), 'tools/setup/ensure.sh'), '--demo-ctr'],
    {
      stdio: 'inherit',
    },
  );
  if (setup.status !== 0) process.exit(1);
  const passes = options.passes ?? 1;
  // Two PyTorch trainers by default: on a small machine more only share the same cores.
  const trainers = command.getOptionValueSource('trainers') === 'default' ? 2 : options.trainers;
  if (trainers < 1) command.error('--model ctr: --trainers must be at least 1');
  const log = options.ci ? clickLogs.reduced : clickLogs.full;
  return { model: new CtrDemo({ trainers, passes, seed: options.seed, log }), passes };
}

async function main(): Promise<number> {
  const interrupted = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => interrupted.abort());
  const outDir = path.resolve(options.out ?? defaultOutDir());
  const interactive = !options.ci && process.stdout.isTTY;
  const { model, passes } = chosenModel();
  const result = await runDemo(
    {
      model,
      pservers: options.pservers,
      replicas: options.replicas,
      consistency: options.consistency,
      passes,
      seed: options.seed,
      chaos: options.chaos,
      grow: options.grow,
      outDir,
      timeoutMs: 10 * 60_000,
    },
    (trainers, samplesPerPass) =>
      interactive ? new TerminalView(trainers, samplesPerPass) : new PlainView(),
    interrupted.signal,
  );
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const { judgement, growth } = result;
  console.log(`\n${capitalized(judgement.text)} after ${seconds(result.durationMs)}.`);
  if (growth) console.log(growthSummary(growth));
  for (const f of result.failures)
    console.log(
      `  kill -9 ${f.victim}: ${f.takenOverBy ?? 'nobody'} took over after ${f.takenOverAt ? seconds(f.takenOverAt - f.killedAt) : '-'}; ` +
        `time lost ${f.resumedAt ? seconds(f.resumedAt - f.killedAt) : 'unknown (not resumed)'}`,
    );
  if (result.audit)
    console.log(
      `Acknowledged updates lost over the whole run: ${result.audit.lost} of ${result.audit.acknowledged} (applied twice: ${result.audit.doubled})` +
        (options.replicas > 0 || result.failures.length === 0
          ? ''
          : '; with --replicas 1 a failover loses none'),
    );
  const stalled = result.longestPauseMs >= demoStallMs;
  console.log(
    `Longest pause in training: ${seconds(result.longestPauseMs)}` +
      (stalled ? ` (stalled: ${seconds(demoStallMs)} or more)` : ''),
  );
  console.log(`Report: ${result.reportPath}\nLogs:   ${path.join(outDir, 'logs')}`);
  const unrecovered = result.failures.filter((f) => f.resumedAt === undefined);
  const shortfalls = [
    judgement.shortOf,
    growth && growth.resumedAt === undefined
      ? `training did not resume at ${growth.to} shards after the ask to grow`
      : '',
    growth?.audit?.lost ? `${growth.audit.lost} acknowledged updates lost across the growth` : '',
    unrecovered.length ? `not recovered from ${unrecovered.map((f) => f.victim).join(', ')}` : '',
    stalled ? `training stalled for ${seconds(result.longestPauseMs)}` : '',
    result.audit?.doubled ? `${result.audit.doubled} updates applied twice` : '',
    options.replicas > 0 && result.audit?.lost
      ? `${result.audit.lost} acknowledged updates lost although every shard has a replica`
      : '',
  ].filter(Boolean);
  if (shortfalls.length > 0) {
    console.error(`The demo fell short: ${shortfalls.join('; ')}`);
    return 1;
  }
  return 0;
}

const capitalized = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(err instanceof Error && err.message === 'interrupted' ? 130 : 1);
  },
);
