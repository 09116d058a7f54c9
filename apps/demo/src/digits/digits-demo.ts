import path from 'node:path';
import { connect, type PserverClient } from '@pserver/client';
import type { LocalCluster } from '@pserver/local-cluster';
import { hyperparameters } from '../model/hyperparameters';
import { accuracy, initialParams, paramNames, type Sample } from '../model/mlp';
import { ackTable } from '../run/ack-audit';
import type { DemoModel, Judgement, TrainerCommand } from '../run/demo-model';
import { demoTaskTimeoutMs } from '../run/demo-cluster';
import { trainerProgram, type TrainerSpec } from '../run/trainer-programs';
import type { Curve } from '../view/report';
import { loadDigits, splitDigits, writeCsvFiles } from './digits';

/** The accuracy the demo promises (measured over several seeds with chaos on). */
export const accuracyFloor = 0.88;

export interface DigitsDemoOptions {
  trainers: TrainerSpec[];
  passes: number;
  seed: number;
  /** Held-out digits for the test accuracy. */
  testSize: number;
}

/**
 * MNIST digits through a small MLP (`src/model`), trained by TypeScript, Python or Go trainers
 * that read the digits as dataset tasks from the master; judged by its accuracy on held-out
 * digits, read by a client of the demo's own.
 */
export class DigitsDemo implements DemoModel {
  readonly title = 'pserver demo: MNIST digits on a fault-tolerant cluster';
  readonly lossLabel = 'cross-entropy';
  /** A pserver, then the leading master: the trainers need it for the next pass's tasks. */
  readonly kills = ['pserver', 'master'] as const;
  readonly trainers: string[];
  readonly samplesPerPass: number;
  private readonly train: Sample[];
  private readonly test: Sample[];
  private dataGlob = '';

  constructor(private readonly options: DigitsDemoOptions) {
    ({ train: this.train, test: this.test } = splitDigits(
      loadDigits(),
      options.testSize,
      options.seed,
    ));
    this.trainers = options.trainers.map((t) => t.name);
    this.samplesPerPass = this.train.length;
  }

  get settings(): Record<string, string | number | boolean> {
    return { trainers: this.trainers.join(' '), passes: this.options.passes };
  }

  prepare(dataDir: string): string {
    writeCsvFiles(dataDir, this.train, 4);
    this.dataGlob = path.join(dataDir, 'train-*.csv');
    return `${this.train.length} digits to train on in ${dataDir}, ${this.test.length} held out for the test`;
  }

  /** What every digits trainer proposes (the same in each language), and the audit's table. */
  async initialize(client: PserverClient): Promise<void> {
    await client.initParams(
      initialParams(hyperparameters.hidden, this.options.seed),
      { adam: {}, learningRate: { base: hyperparameters.learningRate } },
      { tables: [ackTable] },
    );
  }

  trainerCommands(masters: string[]): TrainerCommand[] {
    return this.options.trainers.map(({ name, language }) => {
      const program = trainerProgram(language);
      return {
        name,
        command: program.command,
        env: program.env,
        args: digitsTrainerArgs(program.args, {
          masters,
          data: this.dataGlob,
          name,
          passes: this.options.passes,
          seed: this.options.seed,
        }),
      };
    });
  }

  onTrainerLine(): undefined {
    return undefined;
  }

  async judge(cluster: LocalCluster): Promise<Judgement> {
    const client = await connect({
      master: cluster.masterAddresses,
      name: 'evaluator',
      observer: true,
    });
    let measured: number;
    try {
      // Declares the tensors; they are initialized already, so nothing is written.
      await client.initParams(initialParams(hyperparameters.hidden, this.options.seed));
      measured = accuracy(await client.getParams(paramNames, Float32Array), this.test);
    } finally {
      await client.close();
    }
    const percent = `${(measured * 100).toFixed(1)} %`;
    return {
      event: { kind: 'accuracy', accuracy: measured },
      text: `test accuracy ${percent} on ${this.test.length} held-out digits`,
      headline: `test accuracy <b>${percent}</b>`,
      shortOf: measured < accuracyFloor ? `accuracy floor ${accuracyFloor * 100} %` : undefined,
    };
  }

  curves(): Curve[] {
    return [];
  }
}

/** A digits trainer's command line, the same in every language (`src/trainer.ts` and examples). */
export function digitsTrainerArgs(
  programArgs: string[],
  job: { masters: string[]; data: string; name: string; passes: number; seed: number },
): string[] {
  return [
    ...programArgs,
    '--master',
    job.masters.join(','),
    '--data',
    job.data,
    '--name',
    job.name,
    '--passes',
    String(job.passes),
    '--seed',
    String(job.seed),
    '--task-timeout-ms',
    String(demoTaskTimeoutMs),
    '--exit-on-stdin-close',
  ];
}
