import { Etcd3, type IKeyValue } from 'etcd3';
import fs from 'node:fs';
import path from 'node:path';
import { bundleScript, spawnNode, startEtcd, waitFor, type EtcdServer } from '../src';

describe('the real-etcd harness', () => {
  let etcd: EtcdServer;
  let client: Etcd3;

  beforeAll(async () => {
    etcd = await startEtcd();
    client = new Etcd3({ hosts: etcd.endpoint, dialTimeout: 3_000 });
  });

  afterAll(async () => {
    client?.close();
    await etcd?.stop();
  });

  it('gives every test its own key prefix', () => {
    const a = etcd.uniquePrefix('same-name');
    const b = etcd.uniquePrefix('same-name');
    expect(a).not.toBe(b);
    expect(a.startsWith('/pserver-test/same-name-')).toBe(true);
  });

  it('deletes a key when its lease is no longer kept alive, and a prefix watch sees the delete', async () => {
    const prefix = etcd.uniquePrefix('lease');
    const deleted: string[] = [];
    const watcher = await client.watch().prefix(prefix).create();
    watcher.on('delete', (kv: IKeyValue) => deleted.push(kv.key.toString()));
    try {
      const lease = client.lease(2);
      await lease.put(`${prefix}member`).value('alive');
      await lease.keepaliveOnce();
      expect(await client.get(`${prefix}member`).string()).toBe('alive');

      // Stop keeping it alive without revoking it: etcd itself must expire it after the TTL.
      lease.release();
      const startedMs = performance.now();
      await waitFor(async () => (await client.get(`${prefix}member`).string()) === null, {
        timeoutMs: 10_000,
        description: 'the leased key is deleted',
      });
      const goneAfterMs = performance.now() - startedMs;
      await waitFor(() => deleted.includes(`${prefix}member`), {
        timeoutMs: 10_000,
        description: 'the watch reports the delete',
      });
      // The key outlived the last keep-alive by about the TTL, not by nothing.
      expect(goneAfterMs).toBeGreaterThan(500);
    } finally {
      await watcher.cancel();
    }
  });

  it('stops an etcd when the process that started it dies, even by SIGKILL', async () => {
    const owner = spawnNode(bundleScript(path.join(__dirname, 'fixtures', 'etcd-owner.ts')), [], {
      name: 'etcd-owner',
    });
    const { etcdPid, dataDir } = (await owner.waitForLog((e) => typeof e.etcdPid === 'number', {
      timeoutMs: 30_000,
    })) as { etcdPid: number; dataDir: string };
    const alive = (): boolean => {
      try {
        process.kill(etcdPid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    await owner.kill();
    await waitFor(() => !alive(), { timeoutMs: 10_000, description: `etcd (pid ${etcdPid}) gone` });
    // Nobody was left to remove its data (on /dev/shm, memory): the test does.
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});
