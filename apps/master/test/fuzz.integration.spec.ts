import fs from 'node:fs';
import path from 'node:path';
import { connectEtcd, JobKeys, type EtcdClient } from '@pserver/coordination';
import {
  describeReport,
  fuzzRpc,
  fuzzSettings,
  LocalCluster,
  MasterDriver,
  MasterFuzzSubject,
  masterTargets,
  residentBytes,
  stopAllProcesses,
  tempDir,
  type DatasetFavorites,
  type FuzzReport,
  type RpcTarget,
} from '@pserver/testing';

// Property-based fuzzing of a real leading master (with real etcd and one pserver): every RPC of
// pserver.v1.Master gets FUZZ_RUNS generated requests (structurally valid messages with extreme
// values, their encodings mutated, and junk), sent as raw bytes. Each answer must be documented,
// a refused request must change neither the master's Status nor any key (or the revision) under
// the job's etcd prefix, the process must stay up and lead, and its memory stay bounded.
// FUZZ_SEED replays a run.

const { seed, runs } = fuzzSettings();
const mib = 1024 * 1024;
// Per test: a generous bound that only catches a hang (cases run at 70–280/s here).
const timeoutMs = 120_000 + runs * 200;
const rssGrowthBoundBytes = 768 * mib;
// Each RPC must have been both accepted and refused (the fuzzer got past the first checks). A run
// of fewer cases may miss one kind of answer by chance, so the check needs this many.
const coverageChecked = runs >= 100;
// Sessions (an hour, the longest allowed) and tasks (a week) that never expire in a run: an
// expiry would change the job between a call and its check.
const sessionTtlSeconds = 3600;
const taskTimeoutMs = 7 * 24 * 3_600_000;

afterAll(stopAllProcesses);

describe(`fuzzing a master process (seed ${seed}, ${runs} cases per RPC)`, () => {
  let cluster: LocalCluster;
  let etcd: EtcdClient;
  let driver: MasterDriver;
  let subject: MasterFuzzSubject;
  let targets: Record<string, RpcTarget<unknown>>;
  let rssAtStart: number;
  const reports: FuzzReport[] = [];
  const summary: string[] = [];

  beforeAll(async () => {
    const dir = tempDir('fuzz-dataset');
    for (const [file, lines] of [
      ['a.jsonl', 300],
      ['b.jsonl', 500],
    ] as const)
      fs.writeFileSync(
        path.join(dir, file),
        Array.from({ length: lines }, (_, i) => JSON.stringify({ file, i })).join('\n') + '\n',
      );
    cluster = await LocalCluster.start({ pservers: 1, masters: 1, sessionTtlSeconds });
    const master = cluster.masters[0]!;
    driver = new MasterDriver(master.address);
    for (let i = 0; i < 3; i++) await driver.registerTrainer(`trainer-${i}`);
    const dataset: DatasetFavorites = {
      globs: [path.join(dir, '*.jsonl')],
      taskBytes: 1024n,
      taskTimeoutMs: BigInt(taskTimeoutMs),
      maxFailures: 1000,
    };
    await driver.setDataset({
      files: { globs: dataset.globs, taskBytes: Number(dataset.taskBytes) },
      taskTimeoutMs,
      maxFailures: dataset.maxFailures,
    });
    etcd = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    subject = new MasterFuzzSubject(master, etcd, new JobKeys(cluster.options.job).root, 1);
    await subject.snapshot();
    targets = masterTargets(subject.model, dataset);
    rssAtStart = residentBytes(master.process.pid);
  });

  afterAll(async () => {
    console.log([`master fuzzing, seed ${seed}, ${runs} cases per RPC:`, ...summary].join('\n  '));
    subject?.close();
    driver?.close();
    etcd?.close();
    await cluster?.stop();
  });

  const fuzz = async (method: string): Promise<FuzzReport> => {
    const report = await fuzzRpc(targets[method]!, subject, { seed, runs });
    reports.push(report);
    return report;
  };

  // In this order: shard counts before the parameters are initialized (which fixes them), tasks
  // handed out before they are reported, trainers unregistered last.
  it.each([
    'RegisterTrainer',
    'KeepAlive',
    'GetClusterView',
    'Status',
    'SetDesiredShards',
    'SetDataset',
    'GetTask',
    'TaskFinished',
    'TaskFailed',
    'BeginInit',
    'FinishInit',
    'UnregisterTrainer',
  ])(
    '%s: documented answers, refusals change neither Status nor etcd',
    async (method) => {
      const report = await fuzz(method);
      if (coverageChecked) {
        expect(report.accepted).toBeGreaterThan(0);
        expect(report.accepted).toBeLessThan(report.cases);
      }
    },
    timeoutMs,
  );

  it(
    'WatchCluster: documented answers, the views parse, watching changes nothing',
    async () => {
      const report = await fuzz('WatchCluster');
      if (coverageChecked) expect(report.answers['CANCELLED (broken off)']).toBeGreaterThan(0);
    },
    timeoutMs,
  );

  it('stays up, leading, with its memory bounded', async () => {
    await subject.checkAlive();
    const master = cluster.masters[0]!;
    const rss = residentBytes(master.process.pid);
    summary.push(
      ...reports.map(describeReport),
      `RSS ${(rssAtStart / mib).toFixed(0)} MiB at start, ${(rss / mib).toFixed(0)} MiB at the end`,
    );
    expect(rss).toBeLessThan(rssAtStart + rssGrowthBoundBytes);
  });
});
