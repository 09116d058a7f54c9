import { placeTensor } from '@pserver/proto';
import { sleep, type ExitStatus } from '@pserver/local-cluster';
import { float32s, PserverDriver } from '../pserver-driver';
import type { Fault, FaultOutcome } from './ledger-faults';
import {
  LedgerTrainer,
  waitForSteps,
  type LedgerShape,
  type LedgerStepError,
  type TrainerProgram,
} from './ledger-trainer';
import { ledgerRowIds, ledgerRowShardOf, ledgerTable, type RowReader } from './ledger-rows';
import { judgeLedger, type LedgerVerdict, type ShardRestore } from './ledger-verdict';
import { everyTrainerSteppingAfter } from './recovery-time';
import { SupervisedCluster, type SupervisedClusterOptions } from './supervised-cluster';

export interface LedgerRunOptions extends LedgerShape {
  program: TrainerProgram;
  /** Pause of each trainer between its steps. */
  paceMs: number;
  faults: Fault[];
  cluster: Partial<SupervisedClusterOptions>;
  /** After each fault: every trainer must acknowledge this many steps before the next. */
  stepsBetweenFaults: number;
  /** Bound on that wait; a run that reaches it goes on, and reports the fault as not recovered. */
  recoveryBoundMs: number;
  /** Training time before each fault (and after the last), so that checkpoints are taken between. */
  settleMs: number;
  /** How the rows of the row ledger are read at the end; required with `tableBuckets`. */
  readRows?: RowReader;
  logDir?: string;
}

export interface FaultReport extends FaultOutcome {
  /** Every trainer stepped `stepsBetweenFaults` times after the reference within the bound. */
  recovered: boolean;
  /** From the reference to every trainer stepping again (undefined: one never did). */
  everyTrainerSteppingMs: number | undefined;
  /** The same from the fault's earlier moment, if it has one (etcd healthy again). */
  everyTrainerSteppingFromEarlierMs: number | undefined;
}

export interface TrainerReport {
  ordinal: number;
  exit: ExitStatus;
  acknowledged: number;
  /** The steps it said it did in its last line (undefined: it never said). */
  doneSteps: number | undefined;
  /** The trainer ids its steps carried, in order: more than one when a session ended under it. */
  trainerIds: number[];
  /** Its last lines other than steps (stderr included), when it did not exit 0. */
  lastWords?: string[];
}

export interface LedgerReport {
  language: string;
  verdict: LedgerVerdict;
  /** The row ledger's verdict, judged as the dense one (when the run had `tableBuckets`). */
  rowVerdict?: LedgerVerdict;
  stepErrors: LedgerStepError[];
  trainers: TrainerReport[];
  faults: FaultReport[];
  restores: number;
  /** Restores that read a chain of deltas on a full checkpoint. */
  restoredDeltas: number;
  /** Shards that took up the state a fenced owner left instead of a checkpoint. */
  adoptions: number;
  /**
   * Shares restored from the checkpoints of another shard count (`reshapeOffline`), and how many
   * of them held slices with marks ahead (a step in flight when the job stopped).
   */
  reshaped: { shares: number; withMarksAhead: number };
  /** Shares a live move's receiver took from memory instead of restoring them. */
  moved: { shares: number; withMarksAhead: number };
  /** Restored checkpoints the run could not read (their zeros cannot be explained). */
  unreadCheckpoints: string[];
  durationMs: number;
}

const elementName = 'ledger';

/**
 * Runs the one-hot ledger: a supervised cluster, `trainers` ledger trainers of one language, the
 * faults one after another (each followed by every trainer stepping again), then the trainers
 * stopped, the ledger read from the shards and judged. Everything it starts is stopped, whatever
 * happens; a fault that throws fails the run.
 */
export async function runLedger(options: LedgerRunOptions): Promise<LedgerReport> {
  const { readRows, tableBuckets } = options;
  if (tableBuckets && !readRows) throw new Error('runLedger: tableBuckets needs readRows');
  const began = Date.now();
  const cluster = await SupervisedCluster.start({ ...options.cluster, logDir: options.logDir });
  const trainers: LedgerTrainer[] = [];
  try {
    for (let ordinal = 0; ordinal < options.trainers; ordinal++)
      trainers.push(
        new LedgerTrainer(
          options.program,
          cluster.masterAddresses,
          ordinal,
          options,
          options.paceMs,
          options.logDir,
          cluster.options.network,
        ),
      );
    await waitForSteps(trainers, 0, options.stepsBetweenFaults, 60_000).then((all) => {
      if (!all)
        throw new Error(`the trainers did not start stepping: ${describeTrainers(trainers)}`);
    });

    const outcomes: (FaultOutcome & { recovered: boolean })[] = [];
    await sleep(options.settleMs);
    for (const fault of options.faults) {
      await cluster.waitUntilServed(0, 60_000);
      const outcome = await fault(cluster, trainers);
      const recovered = await waitForSteps(
        trainers,
        outcome.referenceMs,
        options.stepsBetweenFaults,
        options.recoveryBoundMs,
      );
      await sleep(Math.max(0, outcome.referenceMs + options.settleMs - Date.now()));
      outcomes.push({ ...outcome, recovered });
    }

    const exits = await Promise.all(trainers.map((t) => t.finish(60_000)));
    const ackTimes = trainers.map((t) => t.acks.map((a) => a.ackMs));
    const faults = outcomes.map((outcome): FaultReport => ({
      ...outcome,
      everyTrainerSteppingMs: everyTrainerSteppingAfter(ackTimes, outcome.referenceMs),
      everyTrainerSteppingFromEarlierMs: outcome.earlier
        ? everyTrainerSteppingAfter(ackTimes, outcome.earlier.atMs)
        : undefined,
    }));

    const length = options.trainers * options.capacity;
    await cluster.waitUntilServed(0, 60_000);
    const values = await readLedger(cluster, length);
    const { restores, unread } = await restoresOf(cluster);
    const placement = placeTensor(
      elementName,
      length,
      cluster.options.blockSize,
      cluster.options.shards,
    );
    const shardOf = (coordinate: number): number =>
      placement[Math.floor(coordinate / cluster.options.blockSize)]!.shard;
    const judged = {
      ...options,
      acks: trainers.flatMap((t) => t.acks),
      errors: trainers.flatMap((t) => t.errors),
      restores,
    };
    const verdict = judgeLedger({ ...judged, values, shardOf });
    let rowVerdict: LedgerVerdict | undefined;
    if (tableBuckets && readRows) {
      const ids = ledgerRowIds(options.trainers, options.capacity);
      const rows = await readRows(cluster.masterAddresses, ledgerTable, ids);
      if (rows.length !== ids.length)
        throw new Error(`readRows gave ${rows.length} values for ${ids.length} rows of dim 1`);
      rowVerdict = judgeLedger({
        ...judged,
        values: rows,
        shardOf: ledgerRowShardOf(ids, tableBuckets, cluster.options.shards),
      });
    }
    return {
      language: options.program.language,
      verdict,
      ...(rowVerdict ? { rowVerdict } : {}),
      stepErrors: trainers.flatMap((t) => t.errors),
      trainers: trainers.map((t, i) => ({
        ordinal: t.ordinal,
        exit: exits[i]!,
        acknowledged: t.acks.length,
        doneSteps: t.doneSteps,
        trainerIds: [...new Set(t.acks.flatMap((a) => a.trainerId ?? []))],
        ...(exits[i]!.code === 0 ? {} : { lastWords: t.lastWords(60) }),
      })),
      faults,
      restores: restores.length,
      restoredDeltas: restores.filter((r) => r.checkpoint.delta).length,
      adoptions: cluster.serving.filter((event) => event.adopted !== undefined).length,
      reshaped: {
        shares: cluster.reshaped.length,
        withMarksAhead: cluster.reshaped.filter((event) => event.marksAhead > 0).length,
      },
      moved: {
        shares: cluster.moved.length,
        withMarksAhead: cluster.moved.filter((event) => event.marksAhead > 0).length,
      },
      unreadCheckpoints: unread,
      durationMs: Date.now() - began,
    };
  } finally {
    await Promise.all(trainers.map((t) => t.process.kill()));
    await cluster.stop();
  }
}

/** The ledger tensor as its shards hold it: every block read from the pserver serving it. */
async function readLedger(cluster: SupervisedCluster, length: number): Promise<Float32Array> {
  const { blockSize, shards } = cluster.options;
  const values = new Float32Array(length);
  const serving = cluster.servingNow();
  for (const block of placeTensor(elementName, length, blockSize, shards)) {
    const { event } = serving.get(block.shard)!;
    const driver = new PserverDriver(event.address, { timeoutMs: 30_000 });
    try {
      const reply = await driver.getParams({ trainerId: 1, shardEpoch: event.epoch }, [block.name]);
      values.set(float32s(reply.params[0]!.content), block.start);
    } finally {
      driver.close();
    }
  }
  return values;
}

async function restoresOf(
  cluster: SupervisedCluster,
): Promise<{ restores: ShardRestore[]; unread: string[] }> {
  const restores: ShardRestore[] = [];
  const unread: string[] = [];
  for (const event of cluster.serving) {
    if (!event.restored) continue;
    try {
      restores.push({
        index: event.index,
        servingMs: event.atMs,
        checkpoint: await event.restored,
      });
    } catch (err) {
      unread.push(`${event.pserver}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return { restores, unread };
}

function describeTrainers(trainers: LedgerTrainer[]): string {
  return trainers
    .map(
      (t) => `${t.process.name}: ${t.acks.length} steps, ${t.process.lines.slice(-3).join(' | ')}`,
    )
    .join('; ');
}
