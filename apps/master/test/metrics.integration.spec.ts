import { spawnSync } from 'node:child_process';
import { shardOf } from '@pserver/proto';
import {
  bytesOf,
  LocalCluster,
  MasterDriver,
  metricsPage,
  PserverDriver,
  stopAllProcesses,
  waitFor,
  type AppProcess,
} from '@pserver/testing';

// `/metrics` of a real master and pserver in cluster mode, before and after a push, a duplicate
// push, a stale push and a checkpoint.
afterAll(stopAllProcesses);

/** The samples of a Prometheus text page: `name{labels}` → value. */
async function scrape(app: AppProcess): Promise<Map<string, number>> {
  const samples = new Map<string, number>();
  for (const row of (await metricsPage(app)).split('\n')) {
    if (!row || row.startsWith('#')) continue;
    const cut = row.lastIndexOf(' ');
    samples.set(row.slice(0, cut), Number(row.slice(cut + 1)));
  }
  return samples;
}

describe('metrics', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 1,
      spares: 0,
      masters: 1,
      leaseTtlSeconds: 2,
      extraPserverArgs: ['--metrics-port', '0'],
      extraMasterArgs: ['--metrics-port', '0'],
    });
  });
  afterAll(() => cluster?.stop());

  it('on a pserver: the shard, RPCs by status and error code, duplicates and checkpoints move', async () => {
    const { pserver, epoch } = cluster.serving().get(0)!;
    expect(shardOf('w', 1)).toBe(0);
    const driver = new PserverDriver(pserver.address);
    const master = new MasterDriver(cluster.masterAddresses[0]!);
    try {
      const { trainerId } = await master.registerTrainer('metrics');
      const context = { trainerId, shardEpoch: epoch };
      const before = await scrape(pserver);
      expect(before.get('pserver_serving')).toBe(1);
      expect(before.get('pserver_shard_index')).toBe(0);
      expect(before.get('pserver_shard_epoch')).toBe(epoch);
      expect(before.get('pserver_lease_deadline_margin_seconds')).toBeGreaterThan(0);
      expect(before.has('process_cpu_seconds_total')).toBe(true);

      const w = bytesOf(new Float32Array([1, 2, 3, 4]));
      await driver.initParam(
        context,
        { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: w },
        { sgd: {}, learningRate: { base: 1 } },
      );
      await driver.finishInitParams(context);
      const grad = { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32' as const, content: w };
      await driver.sendGrads({ ...context, step: 1 }, [grad]);
      await driver.sendGrads({ ...context, step: 1 }, [grad]); // a duplicate
      await driver
        .sendGrads({ ...context, step: 2, shardEpoch: epoch + 1000 }, [grad])
        .catch(() => undefined);
      await driver.saveCheckpoint();

      const after = await scrape(pserver);
      const calls = (labels: string): number =>
        after.get(`pserver_rpc_calls_total{${labels}}`) ?? 0;
      expect(calls('method="SendGrads",code="OK",error=""')).toBe(2);
      expect(calls('method="SendGrads",code="INVALID_ARGUMENT",error="PSERVER_BOGUS_EPOCH"')).toBe(
        1,
      );
      expect(calls('method="SaveCheckpoint",code="OK",error=""')).toBe(1);
      expect(after.get('pserver_duplicate_pushes_total')).toBe(1);
      expect(after.get('pserver_updates_applied_total')).toBe(1);
      expect(after.get('pserver_shard_bytes')).toBe(16);
      expect(after.get('pserver_checkpoint_bytes')).toBeGreaterThan(0);
      expect(
        Date.now() / 1000 - after.get('pserver_checkpoint_last_success_timestamp_seconds')!,
      ).toBeLessThan(60);
      // The initial checkpoint and SaveCheckpoint's.
      expect(after.get('pserver_checkpoint_duration_seconds_count')).toBeGreaterThanOrEqual(2);
      expect(after.get('pserver_checkpoint_duration_seconds_sum')).toBeGreaterThan(0);
      expect(after.get('pserver_checkpoint_failures_total')).toBe(0);
      expect(after.get('pserver_rpc_payload_bytes_total{method="SendGrads",direction="in"}')).toBe(
        3 * 16,
      );
      expect(after.get('pserver_rpc_duration_seconds_count{method="SendGrads",code="OK"}')).toBe(2);
    } finally {
      driver.close();
      master.close();
    }
  });

  // Debian's promtool (the prometheus package) on the live pages: names, types and help as
  // Prometheus wants them.
  it.each(['pserver', 'master'])('the %s page passes promtool check metrics', async (app) => {
    const text = await metricsPage(
      app === 'pserver' ? cluster.serving().get(0)!.pserver : cluster.masters[0]!,
    );
    expect(text).not.toContain('NaN');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: check.status, output: `${check.stdout}${check.stderr}` }).toEqual({
      status: 0,
      output: '',
    });
  });

  it('puts level, component, shard index and epoch on every pserver line once it serves', () => {
    const { pserver, epoch } = cluster.serving().get(0)!;
    const lines = pserver.process.jsonLines();
    const from = lines.findIndex((e) => e.msg === 'serving');
    expect(from).toBeGreaterThanOrEqual(0);
    const serving = lines.slice(from);
    expect(serving.map((e) => e.msg)).toContain('checkpoint committed');
    for (const line of serving)
      expect(line).toMatchObject({
        level: expect.any(String),
        component: expect.any(String),
        index: 0,
        shardEpoch: epoch,
      });
    // A spare waiting for an index says so without one.
    const waiting = lines.find((e) => String(e.msg).startsWith('waiting for a shard index'));
    expect(waiting).toMatchObject({ component: 'node' });
    expect(waiting).not.toHaveProperty('index');
  });

  it('on the master: leadership, trainers and tasks by state', async () => {
    const [leader] = cluster.masters;
    const master = new MasterDriver(leader!.address);
    try {
      const { trainerId } = await master.registerTrainer('tasks');
      await master.setDataset({ records: { records: 3, taskRecords: 1 } });
      await master.getTask(trainerId, 0);
      const samples = await waitFor(
        async () => {
          const s = await scrape(leader!);
          return s.get('pserver_master_tasks{state="pending"}') === 1 ? s : undefined;
        },
        { timeoutMs: 10_000, description: 'the pending task in the metrics' },
      );
      expect(samples.get('pserver_master_leader')).toBe(1);
      expect(samples.get('pserver_master_became_leader_total')).toBe(1);
      expect(samples.get('pserver_master_sessions_expired_total')).toBe(0);
      expect(samples.get('pserver_master_trainers')).toBeGreaterThanOrEqual(1);
      expect(samples.get('pserver_master_tasks{state="todo"}')).toBe(2);
      expect(samples.get('pserver_master_pass')).toBe(0);
      // No change of the shard count under way.
      expect(samples.get('pserver_master_reshape{phase="handing_back"}')).toBe(0);
      expect(samples.get('pserver_master_reshape{phase="restoring"}')).toBe(0);
      // The job's shards went to spares when it started; nothing was promoted.
      expect(samples.get('pserver_master_assignments_total{kind="spare"}')).toBeGreaterThanOrEqual(
        1,
      );
      expect(samples.get('pserver_master_assignments_total{kind="promotion"}')).toBe(0);
      expect(samples.get('pserver_rpc_calls_total{method="GetTask",code="OK",error=""}')).toBe(1);
    } finally {
      master.close();
    }
  });
});
