import { connectEtcd, JobKeys, type EtcdClient } from '@pserver/coordination';
import { connect } from '@pserver/client';
import {
  appBundle,
  LocalCluster,
  PserverDriver,
  spawnNode,
  stopAllProcesses,
} from '@pserver/testing';

// The end of a job: two trainers each ask it to finish (FinishJob with trainers = 2); the job
// finishes with the second. Every pserver commits a final checkpoint holding every push it
// acknowledged and exits 0 — the spare too —, no index is assigned again, a new trainer is
// refused, and the masters exit 0 once no pserver is left. Nothing of the job keeps running.
afterAll(stopAllProcesses);

describe('a finished job', () => {
  let client: EtcdClient | undefined;
  afterEach(() => client?.close());

  it('ends: pservers exit 0 after a final checkpoint, then the masters', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      spares: 1,
      masters: 2,
      blockSize: 512,
    });
    const keys = new JobKeys(cluster.options.job);
    client = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    const a = await connect({ master: cluster.masterAddresses, name: 'trainer-a' });
    const b = await connect({ master: cluster.masterAddresses, name: 'trainer-b' });
    try {
      const size = 4096;
      await a.initParams({ w: new Float32Array(size) }, { sgd: {}, learningRate: { base: 1 } });
      for (let step = 0; step < 30; step++)
        await (step % 2 ? a : b).step(async (ctx) => {
          await ctx.sendGrads({ w: new Float32Array(size).fill(-1) });
        });
      const serving = [...cluster.serving().entries()].sort(([i], [j]) => i - j);
      const applied = await Promise.all(
        serving.map(async ([, { pserver }]) => {
          const driver = new PserverDriver(pserver.address);
          return Number((await driver.status().finally(() => driver.close())).updatesApplied);
        }),
      );
      // Blocks applied: 30 pushes of each block a shard holds (both hold some).
      expect(applied.every((n) => n > 0 && n % 30 === 0)).toBe(true);
      // The spare is held (SIGSTOP), so that the job stays finished-but-not-gone while we look.
      const spare = cluster.pservers.find(
        (p) => ![...cluster.serving().values()].some((s) => s.pserver === p),
      )!;
      spare.process.signal('SIGSTOP');

      // Trainer a asks and leaves; the job waits for a second trainer.
      expect(await a.finishJob({ trainers: 2 })).toBe(false);
      await a.close();
      const finishedAt = Date.now();
      expect(await b.finishJob({ trainers: 2 })).toBe(true);

      // Every serving pserver commits a final checkpoint and exits 0.
      for (const [, { pserver }] of serving) expect((await pserver.process.exited).code).toBe(0);
      for (const [index] of serving) {
        const meta = JSON.parse((await client.get(keys.checkpointLatest(index)).string())!) as {
          updatesApplied: string;
          timestampNs: string;
        };
        expect(Number(meta.updatesApplied)).toBe(applied[index]);
        expect(Number(BigInt(meta.timestampNs) / 1_000_000n)).toBeGreaterThanOrEqual(finishedAt);
      }
      // No index is assigned again (to the spare, which is still registered).
      expect(await client.getAll().prefix(keys.assignPrefix).keys()).toEqual([]);
      // A trainer that comes now is refused; pserverctl says the job is finished (exit 0).
      await expect(
        connect({ master: cluster.masterAddresses, name: 'late' }),
      ).rejects.toMatchObject({ code: 'MASTER_JOB_FINISHED' });
      const ctl = spawnNode(
        appBundle('pserverctl'),
        ['--master', cluster.masterAddresses.join(','), 'status'],
        { name: 'pserverctl-status' },
      );
      expect((await ctl.exited).code).toBe(0);
      expect(ctl.lines[0]).toMatch(/· FINISHED$/);
      console.log(`pserverctl status of the finished job:\n${ctl.lines.join('\n')}`);

      // The spare goes on, sees the job finished, and leaves; then every master exits 0.
      spare.process.signal('SIGCONT');
      expect((await spare.process.exited).code).toBe(0);
      for (const master of cluster.masters) expect((await master.process.exited).code).toBe(0);
    } finally {
      await a.close();
      await b.close();
      await cluster.stop();
    }
  }, 120_000);
});
