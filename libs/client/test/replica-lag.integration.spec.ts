import { Etcd3 } from 'etcd3';
import { LocalCluster, stopAllProcesses, waitFor } from '@pserver/testing';
import { connect, type PserverClient } from '../src';

afterAll(() => stopAllProcesses());

// Every pserver of this job answers no forward once it is a replica (the `forward:stall`
// failpoint): alive, its lease kept, but never applying. The primary must not wait for such a
// replica for ever: past --replica-lag-timeout-s it deletes the replica's key and goes on.
describe('a replica alive but never applying', () => {
  let cluster: LocalCluster;
  let client: PserverClient;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 1,
      spares: 1,
      replicas: 1,
      masters: 1,
      leaseTtlSeconds: 2,
      extraPserverArgs: ['--failpoint', 'forward:stall', '--replica-lag-timeout-s', '1'],
    });
    client = await connect({ master: cluster.masterAddresses });
    await client.initParams({ w: new Float32Array(4) }, { sgd: {}, learningRate: { base: 1 } });
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('is dropped by the primary (its key deleted), and pushes go on', async () => {
    const primary = cluster.pserverServing(0);
    // The replica has loaded its copy: from now on the primary waits for it.
    await waitFor(() => primary.process.lastLog('a replica is in sync'), {
      timeoutMs: 30_000,
      description: 'a replica waited for',
    });
    const steps = 5;
    let longestMs = 0;
    for (let step = 0; step < steps; step++) {
      const began = performance.now();
      await client.step((ctx) => ctx.sendGrads({ w: new Float32Array(4).fill(-1) }));
      longestMs = Math.max(longestMs, performance.now() - began);
    }
    const dropped = primary.process.lastLog(
      'dropped a replica that left a push unapplied too long',
    );
    expect(dropped).toBeDefined();
    // The stall is the timeout, up to a fortieth of it more (the check's period), and the
    // delete in etcd; the bound only catches a check that waits far longer.
    console.log(
      `replica lag timeout 1 s: the step that waited took ${Math.round(longestMs)} ms ` +
        `(the push waited ${String(dropped!.waitedMs)} ms until the replica's key was deleted)`,
    );
    expect(longestMs).toBeLessThan(1_000 + 3_000);
    const { w } = await client.getParams(['w']);
    expect([...w]).toEqual([steps, steps, steps, steps]);

    // The dropped key is gone from etcd: the member may be the replica again, under a new key.
    const etcd = new Etcd3({ hosts: cluster.etcd.endpoint });
    try {
      const key = `/pserver/local/replica/0/${String(dropped!.member)}`;
      const now = await etcd.get(key).exec();
      const revisions = now.kvs.map((kv) => Number(kv.create_revision));
      expect(revisions).not.toContain(Number(dropped!.keyRevision));
      expect(Number(dropped!.keyRevision)).toBeGreaterThan(0);
    } finally {
      etcd.close();
    }
  });
});
