// `npx nx run demo:cluster -- --pservers 3 --trainers 4`: the demo's cluster and trainers without
// the show: every process's output with its name in front, and the cluster left running after
// training, for you to poke at (kill -9 a pserver, start a trainer of your own) until Ctrl-C.
import path from 'node:path';
import { Command } from 'commander';
import type { JobConsistency } from '@pserver/coordination';
import { consistencyOption, positive } from './cli-options';
import { defaultOutDir } from './run/out-dir';
import { DigitsDemo } from './digits/digits-demo';
import { DemoCluster } from './run/demo-cluster';
import { lineupOf, withTrainerOptions, type TrainerCounts } from './run/trainer-programs';
import { compactLine } from './view/compact-line';

const options = withTrainerOptions(
  new Command('demo-cluster')
    .description('Runs etcd, 2 masters, pservers and a spare, and trainers, until Ctrl-C.')
    .option('--pservers <n>', 'shards (one pserver each; one more waits as a spare)', positive, 3),
)
  .addOption(consistencyOption())
  .option('--passes <n>', 'passes over the training digits', positive, 4)
  .option('--seed <n>', 'seed of the data split and the initial weights', positive, 1)
  .option('--out <dir>', 'where data and logs go (default tmp/demo/cluster-<time>)')
  .parse()
  .opts<
    TrainerCounts & {
      pservers: number;
      consistency: JobConsistency;
      passes: number;
      seed: number;
      out?: string;
    }
  >();

async function main(): Promise<void> {
  const outDir = path.resolve(options.out ?? defaultOutDir('cluster-'));
  const model = new DigitsDemo({ ...options, trainers: lineupOf(options), testSize: 2000 });
  model.prepare(path.join(outDir, 'data'));
  const demo = await DemoCluster.start({
    pservers: options.pservers,
    replicas: 0,
    consistency: options.consistency,
    logDir: path.join(outDir, 'logs'),
    onLine: (name, line) => {
      const text = compactLine(line);
      if (text !== undefined) console.log(`${name.padEnd(10)} | ${text}`);
    },
  });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log('stopping every process…');
    await demo.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());

  demo.startTrainers(model.trainerCommands(demo.cluster.masterAddresses));
  const { cluster } = demo;
  for (const p of demo.processes()) console.log(`started ${p.name} (pid ${p.pid})`);
  console.log(
    [
      '',
      `etcd     ${cluster.etcd.endpoint}`,
      `masters  ${cluster.masterAddresses.join(',')}`,
      `pservers ${cluster.pservers.map((p) => p.address).join(',')} (the last one is the spare)`,
      `logs     ${path.join(outDir, 'logs')}`,
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  // Stay up until Ctrl-C, also after the trainers are done.
  await new Promise(() => undefined);
}

main().catch((err: unknown) => {
  console.error(`demo-cluster: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
