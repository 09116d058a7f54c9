// A demo trainer: digits through the MLP, with the weights on the pservers and the data handed out
// as tasks by the master. It uses only the public API of @pserver/client, and reports what it does
// as one JSON line per event on stdout (the demo draws its view and report from them).
import { Command } from 'commander';
import { connect, readRecords } from '@pserver/client';
import { positive } from './cli-options';
import { fromCsvLine } from './digits/digits';
import { hyperparameters } from './model/hyperparameters';
import { gradients, initialParams, paramNames, type Sample } from './model/mlp';

const options = new Command('demo-trainer')
  .description('Trains the digits MLP on the tasks of a pserver job.')
  .requiredOption('--master <addresses>', 'master replicas, comma-separated', (v) => v.split(','))
  .requiredOption('--data <glob>', 'the training files (CSV: label, 784 pixels)')
  .option('--name <name>', 'this trainer’s name', `trainer-${process.pid}`)
  .option('--passes <n>', 'passes over the data', positive, 3)
  .option('--batch <n>', 'samples per step', positive, hyperparameters.batch)
  .option('--task-bytes <n>', 'bytes of data per task', positive, hyperparameters.taskBytes)
  .option('--task-timeout-ms <n>', 'how long a task may be held (default: the master’s)', positive)
  .option('--hidden <n>', 'hidden units', positive, hyperparameters.hidden)
  .option('--seed <n>', 'seed of the initial weights', positive, 1)
  .option('--learning-rate <rate>', 'Adam learning rate', Number, hyperparameters.learningRate)
  .option('--exit-on-stdin-close', 'exit when standard input closes (set by the demo)')
  .parse()
  .opts<{
    master: string[];
    data: string;
    name: string;
    passes: number;
    batch: number;
    taskBytes: number;
    taskTimeoutMs?: number;
    hidden: number;
    seed: number;
    learningRate: number;
    exitOnStdinClose?: boolean;
  }>();

const report = (event: string, fields: Record<string, unknown> = {}): void =>
  console.log(JSON.stringify({ event, t: Date.now(), ...fields }));

async function main(): Promise<void> {
  if (options.exitOnStdinClose) {
    // The demo holds the other end: when it dies, even by SIGKILL, this trainer goes too.
    process.stdin.resume();
    process.stdin.once('end', () => process.exit(1));
  }
  const client = await connect({ master: options.master, name: options.name });
  // Every trainer proposes the same dataset and the same initial weights; the first counts.
  await client.setDataset({
    files: { globs: [options.data], taskBytes: options.taskBytes },
    ...(options.taskTimeoutMs ? { taskTimeoutMs: options.taskTimeoutMs } : {}),
  });
  await client.initParams(initialParams(options.hidden, options.seed), {
    adam: {},
    learningRate: { base: options.learningRate },
  });
  report('ready');

  const train = async (batch: Sample[], pass: number): Promise<void> => {
    const started = Date.now();
    const loss = await client.step(async (ctx) => {
      const params = await ctx.getParams(paramNames, Float32Array);
      const { loss, grads } = gradients(params, batch);
      await ctx.sendGrads({ ...grads });
      return loss;
    });
    report('step', { pass, loss, samples: batch.length, started });
  };

  for (let pass = 0; pass < options.passes; pass++) {
    for await (const task of client.tasks(pass)) {
      let batch: Sample[] = [];
      for await (const line of readRecords(task)) {
        batch.push(fromCsvLine(line));
        if (batch.length === options.batch) {
          await train(batch, pass);
          batch = [];
        }
      }
      if (batch.length > 0) await train(batch, pass);
    }
    report('pass over', { pass });
  }
  await client.close();
  report('done');
}

// Exits at once when done: the pipe on standard input would keep the process alive.
main().then(
  () => process.exit(0),
  (err: unknown) => {
    report('failed', { error: String(err) });
    process.exit(1);
  },
);
