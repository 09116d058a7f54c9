// A trainer: linear regression on synthetic data with known weights, through the public API of
// @pserver/client. Run several at once against one job; each prints its progress and, at the end,
// the weights it reads back from the pservers.
import { Command, InvalidArgumentError } from 'commander';
import { connect, loadClientSecurity } from '@pserver/client';
import { batches, features, gradients, trueBias, trueWeights } from './model';

const positive = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`expected a positive integer, got '${value}'`);
  return n;
};
const list = (value: string): string[] => value.split(',').filter(Boolean);

const options = new Command('linear-regression')
  .description('Trains y = x·w + b on synthetic data through a pserver job.')
  .option('--master <addresses>', 'master replicas, comma-separated', list)
  .option('--pservers <addresses>', 'standalone pservers in index order, comma-separated', list)
  .option('--name <name>', 'this trainer’s name', `trainer-${process.pid}`)
  .option('--steps <n>', 'training steps', positive, 500)
  .option('--batch <rows>', 'rows per batch', positive, 32)
  .option('--seed <n>', 'seed of this trainer’s batches', positive, process.pid)
  .option('--learning-rate <rate>', 'SGD learning rate', Number, 0.1)
  .option('--report-every <n>', 'steps between progress lines', positive, 100)
  .option(
    '--finish-job <trainers>',
    'at the end, ask the job to finish once this many trainers (this one included) asked',
    positive,
  )
  .option('--json', 'print JSON lines')
  .option('--tls-ca <file>', 'connect with TLS; the CA of the servers’ certificates (PEM)')
  .option('--tls-cert <file>', 'client certificate for mutual TLS (PEM)')
  .option('--tls-key <file>', 'its private key (PEM)')
  .option('--tls-server-name <name>', 'the name in the servers’ certificates, if not the host')
  .option('--token-file <file>', 'send the bearer token in this file (needs TLS)')
  .parse()
  .opts<{
    master?: string[];
    pservers?: string[];
    name: string;
    steps: number;
    batch: number;
    seed: number;
    learningRate: number;
    reportEvery: number;
    finishJob?: number;
    json?: boolean;
    tlsCa?: string;
    tlsCert?: string;
    tlsKey?: string;
    tlsServerName?: string;
    tokenFile?: string;
  }>();

const print = (event: string, fields: Record<string, unknown>): void =>
  console.log(
    options.json
      ? JSON.stringify({ trainer: options.name, event, ...fields })
      : `${options.name}: ${event} ${Object.entries(fields)
          .map(
            ([k, v]) =>
              `${k}=${Array.isArray(v) ? v.map((x: number) => x.toFixed(3)).join(',') : String(v)}`,
          )
          .join(' ')}`,
  );

async function main(): Promise<void> {
  const client = await connect({
    master: options.master,
    pservers: options.pservers,
    name: options.name,
    ...loadClientSecurity({
      caFile: options.tlsCa,
      certFile: options.tlsCert,
      keyFile: options.tlsKey,
      serverName: options.tlsServerName,
      tokenFile: options.tokenFile,
    }),
  });
  const sgd = { sgd: {}, learningRate: { base: options.learningRate } };
  await client.initParams({ w: new Float64Array(features), b: new Float64Array(1) }, sgd);
  const nextBatch = batches(options.seed, options.batch);

  for (let step = 1; step <= options.steps; step++) {
    const batch = nextBatch();
    const loss = await client.step(async (ctx) => {
      const { w, b } = await ctx.getParams(['w', 'b'], Float64Array);
      const grads = gradients(w, b, batch);
      await ctx.sendGrads({ w: grads.w, b: grads.b });
      return grads.loss;
    });
    if (step % options.reportEvery === 0 || step === options.steps)
      print('progress', { step, loss: loss.toExponential(3) });
  }

  const { w, b } = await client.getParams(['w', 'b'], Float64Array);
  print('done', { weights: [...w], bias: [...b], trueWeights: [...trueWeights], trueBias });
  if (options.finishJob !== undefined) {
    const finished = await client.finishJob({ trainers: options.finishJob });
    print('asked the job to finish', { finished });
  }
  await client.close();
}

main().catch((err: unknown) => {
  console.error(`${options.name}: failed:`, err);
  process.exit(1);
});
