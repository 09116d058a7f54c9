import {
  describeLedgerReport,
  reshapeLive,
  runLedger,
  stopAllProcesses,
  type LedgerReport,
  type RowReader,
} from '@pserver/testing';
import { connect } from '../src';
import { trainerProgram, type Language, type TrainerSources } from './trainer-programs';

// The one-hot ledger (libs/testing/src/ledger/) through changes of the shard count of the running
// job — 2 → 3 → 2 → 4 — while four trainers push: `SetDesiredShards` on a running job names a
// receiver for each index of the new count, which copies that index's slices from every primary
// while they serve and applies their pushes, sliced, as they come; then every primary commits a
// final checkpoint and hands its index back, and each receiver serves the share it holds. Primaries hand back one by one, so steps are in flight:
// applied on a shard already handed back, not yet on another. Run again under the new view, each
// is applied exactly once, and nothing acknowledged is lost, with replicas or without.
const trainers = 4;
const capacity = 4_096;
const tableBuckets = 256;

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

describe.each<[Language, number]>([
  ['typescript', 0],
  ['typescript', 1],
  ['python', 0],
  ['go', 1],
])(
  'the one-hot ledger with %s trainers and %i replicas while the running job changes its shard count',
  (language, replicas) => {
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
        faults: [reshapeLive(3), reshapeLive(2), reshapeLive(4)],
        cluster: { shards: 2, spares: 0, replicas, masters: 1, blockSize: 512 },
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

    it('hands every shard back, and every index of each new count takes its share from a receiver that copied it live', () => {
      expect(report.faults.map((f) => f.notes?.handedBack)).toEqual([2, 3, 2]);
      expect(report.moved.shares).toBe(3 + 2 + 4);
      expect(report.reshaped.shares).toBe(0);
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
