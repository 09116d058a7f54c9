import {
  describeLedgerReport,
  etcdOutage,
  killLeadingMaster,
  killPserver,
  pausePserver,
  pauseTrainersThroughFailover,
  runLedger,
  stopAllProcesses,
  type LedgerReport,
} from '@pserver/testing';
import { trainerProgram, type Language, type TrainerSources } from './trainer-programs';

// The one-hot ledger (libs/testing/src/ledger/): parameters start at zero under plain SGD with
// learning rate 1, and every (trainer, step) owns one coordinate its gradient raises by exactly
// 1.0, so the final tensor says how often each acknowledged step was applied. Real etcd, two
// masters, two shards and a spare; the test is the supervisor that restarts whatever exits.
const leaseTtlSeconds = 2;
const sessionTtlSeconds = 3;
const trainers = 4;
// Each trainer's coordinates: more than it can step through in a run at this pace.
const capacity = 8_192;
const paceMs = 10;
// Blocks of 1,024: the ledger is 32 blocks, spread over both shards.
const blockSize = 1_024;
// 2 MiB of parameters no step touches on each shard: restoring a shard takes a real model's time
// (a replacement is assigned a while before it serves).
const ballast = 1024 * 1024;
// Trainers must step again this soon after the cluster serves again. Generous (the goal is about
// a second); it catches a client that waits out a reconnect backoff of many seconds.
const resumeBoundMs = 5_000;

const faults = [
  killPserver(0),
  killLeadingMaster(),
  pausePserver(1, leaseTtlSeconds * 1_000 + 2_000),
  pauseTrainersThroughFailover(0, sessionTtlSeconds * 1_000 + 2_000),
  pauseTrainersThroughFailover(1, sessionTtlSeconds * 1_000 + 2_000),
  etcdOutage(5_000),
];

const ledgerTrainers: TrainerSources = {
  typescript: 'ledger-trainer.ts',
  python: 'ledger_trainer.py',
  go: 'ledgertrainer',
};

afterAll(() => stopAllProcesses());

describe.each<Language>(['typescript', 'python', 'go'])(
  'the one-hot ledger with %s trainers through every kind of failover',
  (language) => {
    let report: LedgerReport;

    beforeAll(async () => {
      report = await runLedger({
        program: trainerProgram(language, ledgerTrainers),
        trainers,
        capacity,
        ballast,
        paceMs,
        faults,
        cluster: {
          shards: 2,
          spares: 1,
          masters: 2,
          leaseTtlSeconds,
          sessionTtlSeconds,
          blockSize,
        },
        stepsBetweenFaults: 20,
        recoveryBoundMs: 40_000,
        // A few checkpoints (one a second) between faults.
        settleMs: 2_500,
      });
      console.log(describeLedgerReport(report));
    }, 600_000);

    it('applies no acknowledged step twice', () => {
      expect(report.verdict.doubles).toEqual([]);
    });

    it('loses only updates acknowledged after the snapshot a replacement restored', () => {
      expect(report.unreadCheckpoints).toEqual([]);
      expect(report.verdict.unexplainedZeros).toEqual([]);
      expect(report.verdict.phantoms).toEqual([]);
    });

    it('raises no step error in any trainer, and every trainer exits 0 having done its steps', () => {
      expect(report.stepErrors).toEqual([]);
      for (const trainer of report.trainers) {
        expect(trainer.exit).toEqual({ code: 0, signal: null });
        expect(trainer.doneSteps).toBe(trainer.acknowledged);
      }
    });

    it('has every trainer stepping again soon after each fault', () => {
      for (const fault of report.faults) {
        expect({ fault: fault.name, recovered: fault.recovered }).toEqual({
          fault: fault.name,
          recovered: true,
        });
        expect({ fault: fault.name, ms: fault.everyTrainerSteppingMs }).toEqual({
          fault: fault.name,
          ms: expect.any(Number),
        });
        expect(fault.everyTrainerSteppingMs).toBeLessThanOrEqual(resumeBoundMs);
      }
    });
  },
);
