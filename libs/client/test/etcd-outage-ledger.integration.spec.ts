import path from 'node:path';
import {
  bundleScript,
  describeLedgerReport,
  etcdOutage,
  runLedger,
  stopAllProcesses,
  type LedgerReport,
} from '@pserver/testing';

// The one-hot ledger (libs/testing/src/ledger/) through an outage of etcd longer than the lease:
// every pserver fences (it can no longer trust its lease) and exits, each one that held a shard
// or an in-sync copy of one writing that state first; once etcd is back and the old leases end,
// the shards' next owners adopt those states instead of the last checkpoints, so not one
// acknowledged update may be missing — with replicas or without.
const leaseTtlSeconds = 2;

afterAll(() => stopAllProcesses());

describe.each([0, 1])('the one-hot ledger through a 5 s etcd outage, replicas %i', (replicas) => {
  let report: LedgerReport;

  beforeAll(async () => {
    report = await runLedger({
      program: {
        language: 'typescript',
        command: process.execPath,
        args: [bundleScript(path.join(__dirname, 'fixtures', 'ledger-trainer.ts'))],
      },
      trainers: 3,
      capacity: 8_192,
      ballast: 256 * 1024,
      paceMs: 10,
      faults: [etcdOutage(5_000)],
      cluster: {
        shards: 2,
        spares: 1,
        replicas,
        masters: 1,
        leaseTtlSeconds,
        sessionTtlSeconds: 3,
        blockSize: 1_024,
      },
      stepsBetweenFaults: 40,
      recoveryBoundMs: 40_000,
      settleMs: 2_500,
    });
    console.log(describeLedgerReport(report));
  }, 600_000);

  it('loses no acknowledged update and applies none twice', () => {
    expect(report.verdict.doubles).toEqual([]);
    expect(report.verdict.lost).toEqual([]);
    expect(report.verdict.unexplainedZeros).toEqual([]);
    expect(report.verdict.phantoms).toEqual([]);
  });

  it("takes up every shard from its fenced owner's state, not from a checkpoint", () => {
    expect(report.adoptions).toBeGreaterThanOrEqual(2);
    expect(report.restores).toBe(0);
  });

  it('raises no step error, and every trainer exits 0 having done its steps', () => {
    expect(report.stepErrors).toEqual([]);
    for (const trainer of report.trainers) {
      expect(trainer.exit).toEqual({ code: 0, signal: null });
      expect(trainer.doneSteps).toBe(trainer.acknowledged);
    }
  });
});
