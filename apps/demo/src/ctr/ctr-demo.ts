import path from 'node:path';
import {
  parseJsonLine,
  spawnProcess,
  workspaceRoot,
  type LocalCluster,
} from '@pserver/local-cluster';
import type { DemoModel, Judgement, TrainerCommand } from '../run/demo-model';
import { systemPython } from '../run/trainer-programs';
import { formatNumber } from '../view/demo-view';
import type { Curve } from '../view/report';

/** A click log's sizes, as `examples/python/ctr/trainer.py` takes them. */
interface ClickLogSize {
  trainSize: number;
  testSize: number;
  vocabs: string;
  /** The held-out AUC the demo promises on this log, set from measured runs (demo README). */
  aucFloor: number;
}

/**
 * The demo's log (the example's vocabularies, twice its training impressions: a second pass over
 * fewer overfits, a longer log keeps improving) and the reduced log of the example's test (`--ci`).
 */
export const clickLogs: Record<'full' | 'reduced', ClickLogSize> = {
  full: { trainSize: 400_000, testSize: 50_000, vocabs: '1000,5000,20000,100000', aucFloor: 0.75 },
  reduced: { trainSize: 80_000, testSize: 10_000, vocabs: '1000,2000,5000,10000', aucFloor: 0.72 },
};

const batch = 256;

export interface CtrDemoOptions {
  trainers: number;
  passes: number;
  seed: number;
  log: ClickLogSize;
}

/** One evaluation a trainer printed: the held-out figures of the model at that moment. */
interface Evaluation {
  t: number;
  step: number;
  auc: number;
  logloss: number;
  optimal_auc: number;
  optimal_logloss: number;
}

/**
 * The click-through-rate example (`examples/python/ctr`): PyTorch trainers, one
 * `RemoteEmbeddingBag` per categorical feature and an MLP through `RemoteParameters`, on a
 * synthetic click log each trainer makes from the seed. The first trainer evaluates the model on
 * the held-out impressions about ten times during the run (the report's AUC and log-loss
 * curves); at the end an evaluator process of the same program judges it, beside the planted
 * optimum (the AUC and log-loss of the log's true click probability).
 */
export class CtrDemo implements DemoModel {
  readonly title =
    'pserver demo: click-through rate from PyTorch trainers on a fault-tolerant cluster';
  readonly lossLabel = 'log-loss';
  /**
   * A pserver only: these trainers read their data from the seed, not as the master's tasks, so
   * killing the master would stop nothing they do (its cost would read as the time until the
   * next step after the new leader, which is not time lost).
   */
  readonly kills = ['pserver'] as const;
  readonly trainers: string[];
  readonly samplesPerPass: number;
  private readonly evaluations: Evaluation[] = [];
  private readonly program = path.join(workspaceRoot(), 'examples', 'python', 'ctr', 'trainer.py');

  constructor(private readonly options: CtrDemoOptions) {
    this.trainers = Array.from({ length: options.trainers }, (_, k) => `ctr-${k}`);
    this.samplesPerPass = options.log.trainSize;
  }

  get settings(): Record<string, string | number | boolean> {
    const { log, passes } = this.options;
    return {
      trainers: this.trainers.join(' '),
      passes,
      impressions: `${formatNumber(log.trainSize)} + ${formatNumber(log.testSize)} held out`,
      vocabularies: log.vocabs,
    };
  }

  prepare(): string {
    const { log, seed } = this.options;
    return (
      `a click log of ${formatNumber(log.trainSize)} impressions to train on and ` +
      `${formatNumber(log.testSize)} held out, made by every trainer from seed ${seed} ` +
      '(examples/python/ctr/data.py)'
    );
  }

  trainerCommands(masters: string[]): TrainerCommand[] {
    const { trainers, passes } = this.options;
    const steps = Math.ceil(this.samplesPerPass / trainers / batch) * passes;
    const evalEvery = Math.max(10, Math.round(steps / 10));
    return this.trainers.map((name, index) => ({
      name,
      command: systemPython(),
      args: [
        ...this.commonArgs(masters, name),
        '--index',
        String(index),
        '--count',
        String(trainers),
        '--passes',
        String(passes),
        '--batch',
        String(batch),
        '--eval-every',
        String(index === 0 ? evalEvery : 0),
        '--no-final-eval',
      ],
    }));
  }

  onTrainerLine(name: string, line: string): string | undefined {
    const event = parseJsonLine(line);
    if (event?.event !== 'eval') return undefined;
    const evaluation = event as unknown as Evaluation;
    this.evaluations.push(evaluation);
    return `${describe(evaluation)} after ${evaluation.step} steps of ${name}`;
  }

  async judge(cluster: LocalCluster, logDir: string): Promise<Judgement> {
    const evaluator = spawnProcess(
      systemPython(),
      [...this.commonArgs(cluster.masterAddresses, 'evaluator'), '--evaluate-only'],
      { name: 'ctr-evaluator', stdinPipe: true, logDir },
    );
    const status = await evaluator.exited;
    const line = evaluator.lines.map(parseJsonLine).find((e) => e?.event === 'eval');
    if (status.code !== 0 || !line) throw evaluator.failure('the evaluation failed');
    const final = line as unknown as Evaluation;
    this.evaluations.push(final);
    const { aucFloor } = this.options.log;
    return {
      event: {
        kind: 'auc',
        auc: final.auc,
        logloss: final.logloss,
        optimalAuc: final.optimal_auc,
        optimalLogloss: final.optimal_logloss,
      },
      text: `${describe(final)} on ${formatNumber(this.options.log.testSize)} held-out impressions`,
      headline:
        `held-out AUC <b>${final.auc.toFixed(3)}</b> (planted optimum ${final.optimal_auc.toFixed(3)})` +
        `, log-loss ${final.logloss.toFixed(3)} (optimum ${final.optimal_logloss.toFixed(3)})`,
      shortOf: final.auc < aucFloor ? `AUC floor ${aucFloor}` : undefined,
    };
  }

  curves(): Curve[] {
    const last = this.evaluations.at(-1);
    const points = (key: 'auc' | 'logloss'): [number, number][] =>
      this.evaluations.map((e) => [e.t, e[key]]);
    const caption =
      'Measured on the held-out impressions by the first trainer during training, and at the end ' +
      'by an evaluator; dashed: the figure of the true click probability.';
    return [
      {
        title: 'Held-out AUC',
        caption,
        yLabel: 'AUC',
        points: points('auc'),
        reference: last && { value: last.optimal_auc, label: `optimum ${last.optimal_auc}` },
      },
      {
        title: 'Held-out log-loss',
        caption,
        yLabel: 'log-loss',
        points: points('logloss'),
        reference: last && {
          value: last.optimal_logloss,
          label: `optimum ${last.optimal_logloss}`,
        },
      },
    ];
  }

  /** What every process of the job is told alike: the masters, the log, the seed. */
  private commonArgs(masters: string[], name: string): string[] {
    const { log, seed } = this.options;
    return [
      this.program,
      '--master',
      masters.join(','),
      '--name',
      name,
      '--seed',
      String(seed),
      '--train-size',
      String(log.trainSize),
      '--test-size',
      String(log.testSize),
      '--vocabs',
      log.vocabs,
      '--exit-on-stdin-close',
    ];
  }
}

const describe = (e: Evaluation): string =>
  `AUC ${e.auc.toFixed(3)}, log-loss ${e.logloss.toFixed(3)} ` +
  `(planted optimum ${e.optimal_auc.toFixed(3)}, ${e.optimal_logloss.toFixed(3)})`;
