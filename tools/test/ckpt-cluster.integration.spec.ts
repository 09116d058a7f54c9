import path from 'node:path';
import { connect } from '@pserver/client';
import { LocalCluster, PserverDriver, stopAllProcesses, tempDir } from '@pserver/testing';
import { ckpt, readSafetensors } from './ckpt-cli';

// verify, export and digest of a cluster job: the metas are in etcd, the files on the job's
// checkpoint volume. A job of two shards trains a dense tensor and a table; its checkpoints are
// verified, exported (the export read back by an independent safetensors reader equals what the
// trainer reads from the pservers) and digested.
afterAll(stopAllProcesses);

describe('tools/ckpt with a cluster job', () => {
  it('verifies, exports and digests the latest checkpoints the metas in etcd name', async () => {
    const cluster = await LocalCluster.start({ pservers: 2, spares: 0, masters: 1, blockSize: 64 });
    const trainer = await connect({ master: cluster.masterAddresses, name: 'ckpt-trainer' });
    try {
      const dim = 4;
      await trainer.initParams(
        { w: Float32Array.from({ length: 300 }, (_, i) => i / 10) },
        { sgd: {}, learningRate: { base: 1 } },
        {
          tables: [
            {
              name: 'emb',
              dim,
              buckets: 16,
              initializer: { constant: { value: 0.5 } },
              optimizer: { sgd: {}, learningRate: { base: 1 } },
            },
          ],
        },
      );
      const ids = BigInt64Array.from([3n, -9n, 1n << 40n, 77n]);
      await trainer.step(async (ctx) => {
        await ctx.pushRows(
          'emb',
          ids,
          Float32Array.from({ length: ids.length * dim }, (_, k) => k),
        );
        await ctx.sendGrads({ w: new Float32Array(300).fill(0.25) });
      });
      const { w } = await trainer.getParams(['w'], Float32Array);
      const rows = await trainer.lookup('emb', ids);
      // Every shard commits what it holds now.
      for (const { pserver } of cluster.serving().values()) {
        const driver = new PserverDriver(pserver.address);
        await driver.saveCheckpoint().finally(() => driver.close());
      }
      const dir = cluster.checkpointDir;
      const etcd = ['--etcd-endpoints', cluster.etcd.endpoint, '--job', cluster.options.job];

      const verified = ckpt('verify', ...etcd, dir);
      expect({ status: verified.status, stderr: verified.stderr }).toEqual({
        status: 0,
        stderr: '',
      });
      expect(verified.stdout).toMatch(/^shard 0 of 2 \(etcd .*ckpt\/0\/hist\/\): \d+ committed/m);
      expect(verified.stdout).toMatch(/^shard 1 of 2 /m);

      const out = path.join(tempDir('ckpt-cluster'), 'job.safetensors');
      const exported = ckpt('export', ...etcd, '--out', out, dir);
      expect({ status: exported.status, stderr: exported.stderr }).toEqual({
        status: 0,
        stderr: '',
      });
      const file = readSafetensors(out);
      expect(file.get('w')!.shape).toEqual([300]);
      expect(new Float32Array(Uint8Array.from(file.get('w')!.data).buffer)).toEqual(w);
      // The table's rows, sorted by id, as the trainer read them.
      const exportedIds = new BigInt64Array(Uint8Array.from(file.get('emb.ids')!.data).buffer);
      const values = new Float32Array(Uint8Array.from(file.get('emb.values')!.data).buffer);
      const sorted = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      expect([...exportedIds]).toEqual(sorted);
      sorted.forEach((id, k) => {
        const at = [...ids].indexOf(id);
        expect([...values.subarray(k * dim, (k + 1) * dim)]).toEqual([
          ...rows.subarray(at * dim, (at + 1) * dim),
        ]);
      });

      // The digest of the job's state: every block of w, every row of emb.
      const digested = ckpt('digest', '--json', ...etcd, dir);
      expect({ status: digested.status, stderr: digested.stderr }).toEqual({
        status: 0,
        stderr: '',
      });
      const digest = JSON.parse(digested.stdout) as { digest: string };
      expect(digest).toMatchObject({
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
        shards: 2,
        tensors: 5,
        elements: 300,
        rows: ids.length,
        tables: [{ name: 'emb', rows: ids.length, pending: 0 }],
      });
      expect(ckpt('digest', ...etcd, dir).stdout).toContain(`digest ${digest.digest}\n`);

      // Without the job, the directory alone has no manifest.json to read: a clear refusal.
      const standalone = ckpt('verify', dir);
      expect(standalone.status).not.toBe(0);
      expect(ckpt('verify', '--etcd-endpoints', cluster.etcd.endpoint, dir).stderr).toContain(
        '--etcd-endpoints needs --job',
      );
    } finally {
      await trainer.close();
      await cluster.stop();
    }
  }, 120_000);
});
