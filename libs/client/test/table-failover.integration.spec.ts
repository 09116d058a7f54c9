import path from 'node:path';
import { bucketOfBigInt, tableShards } from '@pserver/proto';
import {
  bundleScript,
  describeLedgerReport,
  killPserver,
  ledgerRowId,
  ledgerTable,
  runLedger,
  stopAllProcesses,
  type LedgerReport,
  type RowReader,
} from '@pserver/testing';
import { connect } from '../src';

// The one-hot ledger (libs/testing/src/ledger/) with its rows: each (trainer, step) raises its own
// dense coordinate and its own row (id ordinal × 2^40 + k) by exactly 1.0 in one push. A table
// spread over three shards, a master, a spare, checkpoints every second on /dev/shm; the pserver
// of one shard is killed with SIGKILL mid-training right after it committed a delta, the spare
// restores the shard's last checkpoint (its full checkpoint and the deltas after it), training
// goes on, and every row is read back with a client's lookup.
const trainers = 3;
const capacity = 4_096;
const shards = 3;
const tableBuckets = 4_096;
const killed = 1;
const stepsBetweenFaults = 20;

/** Rows read the way a user reads them: a client attached to the master, without initializing. */
const readRows: RowReader = async (masters, table, ids) => {
  const reader = await connect({ master: masters, initializer: false });
  try {
    return await reader.lookup(table, ids);
  } finally {
    await reader.close();
  }
};

afterAll(() => stopAllProcesses());

describe('a table over three shards through a kill -9 of one shard’s pserver', () => {
  let report: LedgerReport;

  beforeAll(async () => {
    report = await runLedger({
      program: {
        language: 'typescript',
        command: process.execPath,
        args: [bundleScript(path.join(__dirname, 'fixtures', 'ledger-trainer.ts'))],
      },
      trainers,
      capacity,
      ballast: 0,
      tableBuckets,
      readRows,
      paceMs: 10,
      faults: [killPserver(killed, { afterDelta: true })],
      cluster: { shards, spares: 1, masters: 1, checkpointIntervalSeconds: 1 },
      stepsBetweenFaults,
      recoveryBoundMs: 30_000,
      // A few checkpoints (one a second) before the kill, and training after the restore.
      settleMs: 3_000,
    });
    console.log(describeLedgerReport(report));
  }, 120_000);

  it('spreads the rows every trainer stepped through over all three shards, ids above 2^32 included', () => {
    const route = tableShards(ledgerTable, tableBuckets, shards);
    const used = new Set<number>();
    for (let ordinal = 0; ordinal < trainers; ordinal++)
      for (let k = 0; k < stepsBetweenFaults; k++)
        used.add(route[bucketOfBigInt(ledgerRowId(ordinal, k), tableBuckets)]!);
    expect([...used].sort()).toEqual([0, 1, 2]);
    expect(ledgerRowId(trainers - 1, 0)).toBeGreaterThan(2n ** 32n);
  });

  it('restores the killed shard from a full checkpoint and its deltas, and every trainer steps on after it', () => {
    expect(report.unreadCheckpoints).toEqual([]);
    expect(report.restores).toBeGreaterThanOrEqual(1);
    // The kill waited for a committed delta: the spare read the chain, not one file.
    expect(report.restoredDeltas).toBe(report.restores);
    expect(report.faults.map((f) => f.recovered)).toEqual([true]);
    expect(report.stepErrors).toEqual([]);
    for (const trainer of report.trainers) {
      expect(trainer.exit).toEqual({ code: 0, signal: null });
      expect(trainer.doneSteps).toBe(trainer.acknowledged);
    }
  });

  it('applies no acknowledged row twice, and loses only rows acknowledged after the restored snapshot', () => {
    const rows = report.rowVerdict!;
    expect(rows.acknowledged).toBeGreaterThan(0);
    // Every row reads 0 or 1 (else it is a double); 0 only where checkpoint-only recovery lost it.
    expect(rows.doubles).toEqual([]);
    expect(rows.unexplainedZeros).toEqual([]);
    expect(rows.phantoms).toEqual([]);
    // Only the killed shard was restored, so only its rows can have been lost.
    expect(rows.lost.filter((e) => e.shard !== killed)).toEqual([]);
  });

  it('keeps the dense one-hot pushed with the rows as exact', () => {
    expect(report.verdict.doubles).toEqual([]);
    expect(report.verdict.unexplainedZeros).toEqual([]);
    expect(report.verdict.phantoms).toEqual([]);
  });
});
