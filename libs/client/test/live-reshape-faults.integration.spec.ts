import {
  describeLedgerReport,
  reshapeLive,
  runLedger,
  stopAllProcesses,
  type LedgerReport,
  type RowReader,
} from '@pserver/testing';
import { connect } from '../src';
import { trainerProgram } from './trainer-programs';

// The one-hot ledger (libs/testing/src/ledger/), with rows, through changes of the running job's
// shard count — 2 → 3 → 2 → 4, one replica of each shard, two masters — each with a kill -9 in
// the middle: of an old owner as the change is asked (its replica is promoted and hands the
// shard back in its place), of the leading master as the change is asked (the next leader carries
// it on from etcd), of the first new owner while it restores its share (a spare restores it
// again). With a replica of each shard, nothing acknowledged may be lost, and nothing applied twice.
const readRows: RowReader = async (masters, table, ids) => {
  const reader = await connect({ master: masters, initializer: false });
  try {
    return await reader.lookup(table, ids);
  } finally {
    await reader.close();
  }
};

afterAll(() => stopAllProcesses());

describe('the one-hot ledger through live changes of the shard count with a kill -9 in each', () => {
  let report: LedgerReport;

  beforeAll(async () => {
    report = await runLedger({
      program: trainerProgram('typescript', {
        typescript: 'ledger-trainer.ts',
        python: 'ledger_trainer.py',
        go: 'ledgertrainer',
      }),
      trainers: 4,
      capacity: 4_096,
      ballast: 0,
      tableBuckets: 256,
      readRows,
      paceMs: 5,
      faults: [
        reshapeLive(3, { kill: 'old owner' }),
        reshapeLive(2, { kill: 'leading master' }),
        reshapeLive(4, { kill: 'new owner' }),
      ],
      cluster: { shards: 2, spares: 1, replicas: 1, masters: 2, blockSize: 512 },
      stepsBetweenFaults: 20,
      recoveryBoundMs: 60_000,
      settleMs: 1_500,
    });
    console.log(describeLedgerReport(report));
  }, 300_000);

  it('loses nothing acknowledged and applies nothing twice, dense and rows', () => {
    expect(report.unreadCheckpoints).toEqual([]);
    for (const verdict of [report.verdict, report.rowVerdict!]) {
      expect(verdict.doubles).toEqual([]);
      expect(verdict.unexplainedZeros).toEqual([]);
      expect(verdict.lost).toEqual([]);
      expect(verdict.phantoms).toEqual([]);
    }
    expect(report.rowVerdict!.acknowledged).toBeGreaterThan(0);
  });

  it('raises no step error, and every trainer steps on after each change of the count', () => {
    expect(report.stepErrors).toEqual([]);
    for (const fault of report.faults)
      expect([fault.name, fault.recovered]).toEqual([fault.name, true]);
    for (const trainer of report.trainers) {
      expect(trainer.exit).toEqual({ code: 0, signal: null });
      expect(trainer.doneSteps).toBe(trainer.acknowledged);
    }
  });
});
