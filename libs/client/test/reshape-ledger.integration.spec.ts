import {
  describeLedgerReport,
  reshapeOffline,
  runLedger,
  stopAllProcesses,
  type LedgerReport,
  type RowReader,
} from '@pserver/testing';
import { connect } from '../src';
import { trainerProgram, type Language, type TrainerSources } from './trainer-programs';

// The one-hot ledger (libs/testing/src/ledger/), with its rows in TypeScript, through changes of the job's shard
// count while it is down: every pserver stopped (SIGTERM: a final checkpoint each) while four
// trainers push, the count changed, new pservers restore their shares — 2 → 3 → 2. The pservers
// stop one after another, so steps are in flight: applied on a shard still up, waiting for one
// stopped. Run again under the new view, each is applied exactly once: marks are a property of
// slices, and the slices that came from a shard that applied it leave it out. Nothing
// acknowledged may be lost (every stop commits).
const trainers = 4;
const capacity = 4_096;
const tableBuckets = 256;
// The pservers stop this far apart: steps applied on the shards still up are in flight.
const staggerMs = 500;

const ledgerTrainers: TrainerSources = {
  typescript: 'ledger-trainer.ts',
  python: 'ledger_trainer.py',
  go: 'ledgertrainer',
};

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

describe.each<Language>(['typescript', 'python', 'go'])(
  'the one-hot ledger with %s trainers through a job restored onto other shard counts',
  (language) => {
    let report: LedgerReport;
    // The TypeScript ledger trainer pushes a row with each step; the Python and Go ones, dense only.
    const rows = language === 'typescript' ? { tableBuckets, readRows } : {};

    beforeAll(async () => {
      report = await runLedger({
        program: trainerProgram(language, ledgerTrainers),
        trainers,
        capacity,
        ballast: 0,
        ...rows,
        paceMs: 5,
        faults: [reshapeOffline(3, { staggerMs }), reshapeOffline(2, { staggerMs })],
        cluster: { shards: 2, spares: 0, masters: 1, blockSize: 512 },
        stepsBetweenFaults: 20,
        recoveryBoundMs: 60_000,
        settleMs: 1_500,
      });
      console.log(describeLedgerReport(report));
    }, 300_000);

    it('loses nothing acknowledged and applies nothing twice, dense and rows', () => {
      expect(report.unreadCheckpoints).toEqual([]);
      for (const verdict of [report.verdict, ...(report.rowVerdict ? [report.rowVerdict] : [])]) {
        expect(verdict.doubles).toEqual([]);
        expect(verdict.unexplainedZeros).toEqual([]);
        expect(verdict.lost).toEqual([]);
        expect(verdict.phantoms).toEqual([]);
      }
      if ('readRows' in rows) expect(report.rowVerdict!.acknowledged).toBeGreaterThan(0);
    });

    it('restored shares holding slices with marks ahead: steps were in flight at the stops', () => {
      expect(report.reshaped.shares).toBe(3 + 2);
      expect(report.reshaped.withMarksAhead).toBeGreaterThan(0);
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
  },
);
