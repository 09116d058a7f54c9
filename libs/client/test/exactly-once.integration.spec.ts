import { execFileSync } from 'node:child_process';
import path from 'node:path';
import {
  bundleScript,
  describeLedgerReport,
  etcdOutage,
  killLeadingMaster,
  killPserver,
  pausePserver,
  pauseTrainersThroughFailover,
  runLedger,
  stopAllProcesses,
  workspaceRoot,
  type LedgerReport,
  type TrainerProgram,
} from '@pserver/testing';

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

type Language = 'typescript' | 'python' | 'go';

/** The ledger trainer of `language`, built first where it needs building. */
function program(language: Language): TrainerProgram {
  const root = workspaceRoot();
  switch (language) {
    case 'typescript':
      return {
        language,
        command: process.execPath,
        args: [bundleScript(path.join(__dirname, 'fixtures', 'ledger-trainer.ts'))],
      };
    case 'python': {
      // Debian's interpreter, the one with python3-grpcio (another python3 may come first on PATH).
      const python = execFileSync('sh', ['-c', 'command -pv python3'], { encoding: 'utf8' });
      return {
        language,
        command: python.trim(),
        args: [path.join(root, 'clients', 'python', 'tests', 'fixtures', 'ledger_trainer.py')],
      };
    }
    case 'go': {
      // GOPATH mode against Debian's Go sources, offline, as the Go client's own targets build.
      const binary = path.join(root, 'tmp', 'bundles', 'ledgertrainer');
      execFileSync(
        path.join(root, 'clients', 'go', 'tools', 'gopath.sh'),
        [
          'go',
          'build',
          '-o',
          binary,
          'github.com/pserver/pserver/clients/go/conformance/ledgertrainer',
        ],
        { stdio: 'inherit' },
      );
      return { language, command: binary, args: [] };
    }
  }
}

afterAll(() => stopAllProcesses());

describe.each<Language>(['typescript', 'python', 'go'])(
  'the one-hot ledger with %s trainers through every kind of failover',
  (language) => {
    let report: LedgerReport;

    beforeAll(async () => {
      report = await runLedger({
        program: program(language),
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
