import {
  cutLeadingMasterFromEtcd,
  cutPrimaryFromReplica,
  cutPserver,
  cutTrainerFromShard,
  describeLedgerReport,
  latePserver,
  lossyPserver,
  NetworkLab,
  runLedger,
  slowEtcd,
  splitEtcd,
  stopAllProcesses,
  type Fault,
  type LedgerReport,
  type SupervisedClusterOptions,
} from '@pserver/testing';
import { trainerProgram, type Language } from './trainer-programs';

// The one-hot ledger (libs/testing/src/ledger/) under network faults: etcd, the masters and every
// pserver each on a host of their own (a network namespace on a bridge: NetworkLab), the trainers
// on the machine. First etcd answers every call late: it is stopped 700 ms in every 800 for 8 s
// (slow, not silent: each call waits up to 0.7 s), so no lease may be lost. With replicas, shard 0's primary is then cut
// off from its replica alone: pushes wait until the primary drops the replica (the lag timeout),
// no longer; and shard 1's replica is cut off one way (the primary's forwards reach it, nothing
// it sends comes back), with the same bound. Then shard 0's pserver is cut off from etcd alone for
// 8 s, so that nothing it serves changes while its lease runs out; then shard 1's is isolated from
// everyone for 8 s, its connections left open. Each must stop acting before its lease is
// another's: not one update may be applied twice, and the state each leaves as it fences is
// adopted by the spare that takes its index, so none is lost either, with replicas or without.
// Then the leading master is cut off from etcd for 6 s while trainers and pservers still reach
// it: it steps down and the other master leads. Then trainer 2 is cut off from shard 1 alone for
// 5 s (its steps wait), and shard 0's pserver loses 5 % of its packets on every link for 20 s
// (slower, nothing cut), and shard 1's links go through a fault proxy that holds every chunk
// 50 ± 20 ms each way for 10 s. Last, on a 3-member etcd of its own, the ledger with etcd split
// 2 + 1 for 8 s: etcd's leader, the leading master and shard 1's pserver on the one side, the rest
// on the other, the trainers reaching both; the cut pserver must fence though every trainer
// reaches it, and its index be served on the majority side. Needs root (CI runs as root).
const leaseTtlSeconds = 2;
const replicaLagTimeoutSeconds = 2;
const faultMs = 8_000;

afterAll(() => stopAllProcesses());

/** The ledger in a lab of its own, 4 trainers of `language`, 2 shards, a spare and 2 masters. */
async function ledgerInLab(
  replicas: number,
  faults: Fault[],
  {
    language = 'typescript',
    ...cluster
  }: Partial<SupervisedClusterOptions> & { language?: Language } = {},
): Promise<LedgerReport> {
  const lab = NetworkLab.create();
  try {
    const report = await runLedger({
      program: trainerProgram(language, {
        typescript: 'ledger-trainer.ts',
        python: 'ledger_trainer.py',
        go: 'ledgertrainer',
      }),
      trainers: 4,
      capacity: 8_192,
      ballast: 256 * 1024,
      paceMs: 10,
      faults,
      cluster: {
        shards: 2,
        spares: 1,
        replicas,
        masters: 2,
        leaseTtlSeconds,
        sessionTtlSeconds: 3,
        blockSize: 1_024,
        replicaLagTimeoutSeconds,
        network: lab,
        ...cluster,
      },
      stepsBetweenFaults: 40,
      recoveryBoundMs: 40_000,
      settleMs: 2_500,
    });
    console.log(describeLedgerReport(report));
    return report;
  } finally {
    lab.destroy();
  }
}

/** The verdict every run must reach: nothing lost or doubled, no step error, clean exits. */
function itKeepsTheLedger(report: () => LedgerReport): void {
  it('loses no acknowledged update and applies none twice', () => {
    const { verdict } = report();
    expect(verdict.doubles).toEqual([]);
    expect(verdict.lost).toEqual([]);
    expect(verdict.unexplainedZeros).toEqual([]);
    expect(verdict.phantoms).toEqual([]);
  });

  it('raises no step error, and every trainer exits 0 having done its steps', () => {
    expect(report().stepErrors).toEqual([]);
    for (const trainer of report().trainers) {
      expect(trainer.exit).toEqual({ code: 0, signal: null });
      expect(trainer.doneSteps).toBe(trainer.acknowledged);
    }
  });
}

describe.each([0, 1])('the one-hot ledger under network faults, replicas %i', (replicas) => {
  let report: LedgerReport;

  beforeAll(async () => {
    report = await ledgerInLab(replicas, [
      slowEtcd({ stallMs: 700, runMs: 100 }, faultMs),
      ...(replicas > 0
        ? [
            cutPrimaryFromReplica(0, faultMs),
            cutPrimaryFromReplica(1, faultMs, 'replica → primary'),
          ]
        : []),
      cutPserver(0, 'etcd', faultMs),
      cutPserver(1, 'everyone', faultMs),
      cutLeadingMasterFromEtcd(6_000),
      cutTrainerFromShard(2, 1, 5_000),
      lossyPserver(0, 0.05, 20_000),
      latePserver(1, { latencyMs: 50, jitterMs: 20 }, 10_000),
    ]);
  }, 600_000);

  itKeepsTheLedger(() => report);

  it('fences each cut pserver; training goes on within lease TTL + 3 s of the failover', () => {
    // The faults that cut a pserver off (cutPserver): they note when it fenced.
    const cuts = report.faults.filter((fault) => 'fencedMs' in fault.notes);
    expect(cuts).toHaveLength(2);
    for (const { name, notes, recovered, everyTrainerSteppingMs } of cuts) {
      expect([name, notes.fencedMs]).toEqual([name, expect.any(Number)]);
      expect([name, recovered]).toEqual([name, true]);
      expect(everyTrainerSteppingMs).toBeLessThan((leaseTtlSeconds + 3) * 1000);
    }
  });

  it('loses no lease while etcd answers every call up to 0.7 s late, and trains on', () => {
    const [late] = report.faults.filter((fault) => fault.name.startsWith('etcd stalled'));
    expect(late?.notes).toEqual(
      expect.objectContaining({ exited: '', newLeaders: 0, servedAnew: 0 }),
    );
    expect(late?.notes.stepsDuring).toBeGreaterThan(0);
  });

  it('has the leading master cut off from etcd step down, and another lead', () => {
    const [cut] = report.faults.filter((fault) => fault.name.includes('leading master'));
    expect(cut?.notes.steppedDownMs).toEqual(expect.any(Number));
    expect(cut?.recovered).toBe(true);
  });

  it('has a trainer cut off from one shard wait, and step again within lease TTL + 3 s of the heal', () => {
    const [cut] = report.faults.filter((fault) => fault.name.startsWith('trainer'));
    expect(cut?.recovered).toBe(true);
    expect(cut?.everyTrainerSteppingMs).toBeLessThan((leaseTtlSeconds + 3) * 1000);
  });

  it('trains on through a link losing 5 % of its packets', () => {
    const [lossy] = report.faults.filter((fault) => fault.name.includes('of its packets'));
    expect(lossy?.notes.stepsDuring).toBeGreaterThan(0);
    expect(lossy?.recovered).toBe(true);
  });

  it('trains on through links 50 ± 20 ms late each way', () => {
    const [late] = report.faults.filter((fault) => fault.name.includes('ms late'));
    expect(late?.notes.stepsDuring).toBeGreaterThan(0);
    expect(late?.recovered).toBe(true);
  });

  if (replicas > 0)
    it('stalls pushes at most the replica lag timeout + 1 s when a primary cannot hear its replica, both ways or one', () => {
      const cuts = report.faults.filter((fault) => fault.reference.includes('without the replica'));
      expect(cuts).toHaveLength(2);
      for (const { name, recovered, notes } of cuts) {
        expect([name, recovered]).toEqual([name, true]);
        expect([name, notes.droppedMs]).toEqual([name, expect.any(Number)]);
        expect(notes.droppedMs).toBeLessThan((replicaLagTimeoutSeconds + 1) * 1000);
      }
    });
});

// The split runs the other clients' trainers: Python without replicas, Go with them.
describe.each<[number, Language]>([
  [0, 'python'],
  [1, 'go'],
])('the one-hot ledger with etcd split 2 + 1, replicas %i, %s trainers', (replicas, language) => {
  let report: LedgerReport;

  beforeAll(async () => {
    report = await ledgerInLab(replicas, [splitEtcd(1, faultMs)], { etcdMembers: 3, language });
  }, 600_000);

  itKeepsTheLedger(() => report);

  it('fences the cut pserver, has the cut master step down, and trains on within lease TTL + 3 s of the failover', () => {
    const [split] = report.faults;
    expect(split?.notes.fencedMs).toEqual(expect.any(Number));
    expect(split?.notes.steppedDownMs).toEqual(expect.any(Number));
    expect(split?.recovered).toBe(true);
    expect(split?.everyTrainerSteppingMs).toBeLessThan((leaseTtlSeconds + 3) * 1000);
  });
});
