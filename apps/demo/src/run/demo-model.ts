import type { PserverClient } from '@pserver/client';
import type { LocalCluster } from '@pserver/local-cluster';
import type { Curve } from '../view/report';
import type { Failure } from './chaos';

/** How to start one trainer process. */
export interface TrainerCommand {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/** The trained model judged on held-out data, after the last pass. */
export interface Judgement {
  /** The line for `events.jsonl`, e.g. `{ kind: 'accuracy', accuracy: 0.91 }`. */
  event: Record<string, unknown>;
  /** For people: `test accuracy 91.2 % on 2,000 held-out digits`. */
  text: string;
  /** The report's headline figure: `test accuracy <b>91.2 %</b>` (HTML). */
  headline: string;
  /** Under the floor the demo promises: the demo exits 1. */
  shortOf?: string;
}

/**
 * What a demo trains: the data its trainers read, the trainer processes, and how the result is
 * judged. The cluster, the chaos, the view and the report are the same for every model.
 */
export interface DemoModel {
  /** The report's title. */
  readonly title: string;
  /** What the trainers' loss is, for the report's axis. */
  readonly lossLabel: string;
  /** The trainers' names, in the view's order. */
  readonly trainers: string[];
  /** Samples in one pass, all trainers together. */
  readonly samplesPerPass: number;
  /** What the chaos kills, in order (see `Chaos`). */
  readonly kills: readonly Failure['target'][];
  /** Settings shown under the report's title. */
  readonly settings: Record<string, string | number | boolean>;
  /** Writes what the trainers read into `dataDir`; returns a line for the story. */
  prepare(dataDir: string): string;
  /**
   * Initializes the job from a client of the demo's own before any trainer starts — the model's
   * tensors as its trainers would, and `ackTable` — so that the demo can count acknowledged
   * updates lost (`AckAudit`). A model whose trainers must initialize it themselves has none, and
   * its run is not audited.
   */
  initialize?(client: PserverClient): Promise<void>;
  /** The trainer processes, for a cluster whose masters are at `masters`. */
  trainerCommands(masters: string[]): TrainerCommand[];
  /**
   * Takes one line a trainer printed (every line of every trainer passes here); returns a line
   * for the story if it says something about the model, such as an evaluation.
   */
  onTrainerLine(name: string, line: string): string | undefined;
  /** The trained model on the pservers, judged. */
  judge(cluster: LocalCluster, logDir: string): Promise<Judgement>;
  /** Charts the report shows beside loss and throughput (e.g. AUC over time). */
  curves(): Curve[];
}
