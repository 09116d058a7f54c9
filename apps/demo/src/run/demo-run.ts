import fs from 'node:fs';
import path from 'node:path';
import { connect, type PserverClient } from '@pserver/client';
import { describeConsistency, type JobConsistency } from '@pserver/coordination';
import { sleep } from '@pserver/local-cluster';
import { chaosLine } from '../view/chaos-line';
import { renderReport } from '../view/report';
import type { DemoSnapshot, DemoView } from '../view/demo-view';
import { AckAudit, type AuditResult } from './ack-audit';
import { Chaos, type Failure } from './chaos';
import { DemoCluster } from './demo-cluster';
import type { DemoModel, Judgement } from './demo-model';
import { LiveGrowth, type Growth } from './live-growth';
import { TrainingProgress } from './training-progress';

export interface DemoOptions {
  model: DemoModel;
  pservers: number;
  /** Replicas of each shard (0: a failover restores the shard's last checkpoint). */
  replicas: number;
  /** The job's consistency mode (the master's `--consistency`). */
  consistency: JobConsistency;
  passes: number;
  /** Picks the shard whose pserver is killed. */
  seed: number;
  chaos: boolean;
  /** With chaos: grow the job by one shard while it trains, before the kills. */
  grow: boolean;
  /** Where the data, logs, events and report go. */
  outDir: string;
  /** A generous bound on the whole run: past it, the demo stops with an error. */
  timeoutMs: number;
}

export interface DemoResult {
  judgement: Judgement;
  failures: Failure[];
  /** The job grown by a shard while it trained, when it was. */
  growth?: Growth;
  /** Acknowledged updates lost and applied twice (a model the demo initializes). */
  audit?: AuditResult;
  durationMs: number;
  /** The longest time no trainer applied a step (see `TrainingProgress.longestPause`). */
  longestPauseMs: number;
  reportPath: string;
}

/**
 * The demo, start to end: write the model's training data, start the cluster and the trainers,
 * inject the failures, wait for the trainers, judge the model on held-out data, stop every
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
  const { model } = options;
  const progress = new TrainingProgress(model.trainers, options.passes, model.samplesPerPass);
  const view = makeView(model.trainers, model.samplesPerPass);
  const record = (event: Record<string, unknown>, text?: string): void => {
    const at = Date.now();
    fs.appendFileSync(eventsFile, JSON.stringify({ t: at, ...event }) + '\n');
    if (text) view.note(text, at);
  };
  record(
    { kind: 'data', train: model.samplesPerPass, seed: options.seed },
    model.prepare(path.join(options.outDir, 'data')),
  );

  let demo: DemoCluster | undefined;
  let auditor: PserverClient | undefined;
  let audit: AckAudit | undefined;
  try {
    const logDir = path.join(options.outDir, 'logs');
    demo = await DemoCluster.start({
      pservers: options.pservers,
      replicas: options.replicas,
      consistency: options.consistency,
      logDir,
      onLine: (name, line) => {
        progress.onTrainerLine(name, line);
        const said = model.onTrainerLine(name, line);
        if (said) record({ kind: 'model', trainer: name, line }, said);
      },
    });
    const cluster = demo;
    // Ctrl-C is acted on between phases and at each tick of the training loop.
    const interrupted = (): void => {
      if (signal.aborted) throw new Error('interrupted');
    };
    interrupted();
    if (model.initialize) {
      auditor = await connect({
        master: cluster.cluster.masterAddresses,
        name: 'auditor',
        // SYNC: the audit does not step (below), and no step waits for it.
        observer: options.consistency.mode === 'sync',
      });
      await model.initialize(auditor);
      // The audit pushes rows as steps of its own: in SYNC every step would wait for it, so there
      // it is an observer and audits nothing.
      if (options.consistency.mode !== 'sync') audit = new AckAudit(auditor, 20);
    }
    demo.startTrainers(model.trainerCommands(cluster.cluster.masterAddresses));
    for (const p of demo.processes())
      record({ kind: 'started', name: p.name, pid: p.pid }, `started ${p.name} (pid ${p.pid})`);

    const growing = options.chaos && options.grow;
    const growth = growing ? liveGrowth(options, demo, progress, record, audit) : undefined;
    const chaos = new Chaos({
      cluster: demo,
      progress,
      victimIndex: options.seed % options.pservers,
      onEvent: (event) => record({ kind: event.kind, ...event.failure }, chaosLine(event)),
      kills: model.kills,
      growth,
      replicas: options.replicas,
    });
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
    await chaos.finish();
    view.render(snapshot(cluster, progress, startedAt));
    const failed = [...progress.trainers.values()].find((t) => t.phase === 'failed');
    if (failed) throw new Error(`${failed.name} failed: ${failed.error}`);
    record({ kind: 'pass over', pass: options.passes - 1 }, 'training done');
    for (const t of progress.trainers.values())
      record({ kind: 'trainer', name: t.name, steps: t.steps, samples: t.samplesByPass });
    const pause = progress.longestPause();
    record({ kind: 'longest pause', ...pause });

    const audited = await audit?.finish();
    if (audited)
      record(
        { kind: 'audit', ...audited },
        `acknowledged updates lost over the whole run: ${audited.lost} of ${audited.acknowledged} (applied twice: ${audited.doubled})`,
      );
    interrupted();
    const judgement = await model.judge(cluster.cluster, logDir);
    interrupted();
    record(judgement.event, judgement.text);
    const finishedAt = Date.now();
    const grown = growth?.begun ? growth.growth : undefined;
    const reportPath = path.join(options.outDir, 'demo-report.html');
    fs.writeFileSync(
      reportPath,
      renderReport({
        title: model.title,
        settings: {
          shards: grown ? `${grown.from} → ${grown.to} (grown live)` : options.pservers,
          replicas: options.replicas,
          consistency: describeConsistency(options.consistency),
          ...model.settings,
          seed: options.seed,
          chaos: options.chaos,
        },
        startedAt,
        finishedAt,
        steps: progress.steps,
        failures: chaos.failures,
        growth: grown,
        headline: judgement.headline,
        audit: audited,
        lossLabel: model.lossLabel,
        curves: model.curves(),
      }),
    );
    return {
      judgement,
      failures: chaos.failures,
      growth: grown,
      audit: audited,
      durationMs: finishedAt - startedAt,
      longestPauseMs: pause?.ms ?? 0,
      reportPath,
    };
  } finally {
    view.close();
    audit?.stop();
    await auditor?.close().catch(() => undefined);
    if (demo) await demo.stop();
    record({ kind: 'stopped' });
  }
}

/** The growth the chaos begins at its moment, its events recorded. */
function liveGrowth(
  options: DemoOptions,
  demo: DemoCluster,
  progress: TrainingProgress,
  record: (event: Record<string, unknown>, text?: string) => void,
  audit: AckAudit | undefined,
): LiveGrowth {
  return new LiveGrowth(
    demo,
    progress,
    (event) => {
      if (event.kind === 'growth asked')
        for (const { name, pid } of event.growth.started) record({ kind: 'started', name, pid });
      record({ kind: event.kind, ...event.growth }, chaosLine(event));
    },
    {
      from: options.pservers,
      replicas: options.replicas,
      audit: audit ? () => audit.check() : undefined,
    },
  );
}

function snapshot(demo: DemoCluster, progress: TrainingProgress, startedAt: number): DemoSnapshot {
  const { cluster } = demo;
  const leader = cluster.leadingMaster();
  return {
    now: Date.now(),
    startedAt,
    progress,
    shards: [...demo.serving()]
      .sort(([a], [b]) => a - b)
      .map(([index, { pserver, epoch, line }]) => {
        // Its share restored from the old count's checkpoints, or copied live.
        const reshaped = (line.reshaped ?? line.moved) as { from?: unknown } | undefined;
        return {
          index,
          name: pserver.process.name,
          epoch,
          restored: line.recovered !== undefined,
          ...(reshaped ? { reshapedFrom: Number(reshaped.from) } : {}),
        };
      }),
    masters: cluster.masters.map((m) => ({
      name: m.process.name,
      state: !m.process.running ? 'killed' : m === leader ? 'leading' : 'standby',
    })),
  };
}
