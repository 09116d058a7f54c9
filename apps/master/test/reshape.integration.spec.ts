import { status } from '@grpc/grpc-js';
import { connect } from '@pserver/client';
import { connectEtcd, JobKeys, readJobState, type EtcdClient } from '@pserver/coordination';
import { RpcError } from '@pserver/rpc';
import { LocalCluster, MasterDriver, stopAllProcesses, waitFor } from '@pserver/testing';

// A change of an initialized job's shard count through a real master: refused while the job's
// pservers run, a reshape once they stopped (the record holds the metas they committed, Status
// says it is pending), and ended by the leader once every new index marked its share restored.
afterAll(stopAllProcesses);

function rejection(promise: Promise<unknown>): Promise<RpcError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: unknown) => {
      if (!(err instanceof RpcError)) throw err;
      return err;
    },
  );
}

describe('the shard count of an initialized job: 1 master, 2 pservers', () => {
  let cluster: LocalCluster;
  let etcd: EtcdClient;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 2,
      masters: 1,
      leaseTtlSeconds: 2,
      blockSize: 4,
    });
    etcd = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
  });

  afterAll(async () => {
    etcd?.close();
    await cluster?.stop();
  });

  it('changes only while the job is down; the reshape shows in Status until every index restored', async () => {
    const keys = new JobKeys(cluster.options.job);
    const master = new MasterDriver(cluster.masters[0]!.address);
    const trainer = await connect({ master: cluster.masterAddresses });
    try {
      await trainer.initParams(
        { w: Float32Array.from({ length: 16 }, (_, i) => i) },
        { sgd: {}, learningRate: { base: 1 } },
      );
    } finally {
      await trainer.close();
    }
    const inUse = await rejection(master.setDesiredShards(3));
    expect(inUse).toMatchObject({
      status: status.FAILED_PRECONDITION,
      code: 'MASTER_SHARDS_IN_USE',
    });
    expect(inUse.message).toContain('stop them first');

    // Stopped (SIGTERM): each commits a final checkpoint and frees its index.
    for (const pserver of cluster.pservers) await pserver.process.stop();
    await waitFor(async () => (await readJobState(etcd, keys)).assignments.length === 0, {
      timeoutMs: 15_000,
      description: 'no index assigned',
    });
    const latest = await Promise.all(
      [0, 1].map(async (i) => JSON.parse((await etcd.get(keys.checkpointLatest(i)).string())!)),
    );

    const answer = await master.setDesiredShards(3);
    const pending = {
      fromShardCount: 2,
      toShardCount: 3,
      sources: [0, 1],
      restored: [],
      corrupt: '',
    };
    expect(answer).toEqual({ shardCount: 3, previousShardCount: 2, reshape: pending });
    expect((await master.status()).reshape).toEqual(pending);
    expect(JSON.parse((await etcd.get(keys.reshape).string())!)).toEqual({
      from: 2,
      to: 3,
      sources: { '0': latest[0], '1': latest[1] },
    });
    expect(await etcd.getAll().prefix(keys.checkpointRoot).keys()).toEqual([]);
    expect((await master.clusterView()).shardCount).toBe(3);

    const again = await rejection(master.setDesiredShards(4));
    expect(again).toMatchObject({
      status: status.FAILED_PRECONDITION,
      code: 'MASTER_RESHAPE_PENDING',
    });
    expect(again.message).toContain('indices 0, 1, 2 of 3 have not restored');

    // The marks the new indices' owners write once they restored and committed their shares.
    for (const index of [0, 1]) await etcd.put(keys.reshapeRestored(index)).value('100');
    await waitFor(async () => (await master.status()).reshape?.restored.length === 2, {
      timeoutMs: 10_000,
      description: 'Status shows two indices restored',
    });
    expect(await etcd.get(keys.reshape).exists()).toBe(true);
    await etcd.put(keys.reshapeRestored(2)).value('101');
    await waitFor(async () => !(await etcd.get(keys.reshape).exists()), {
      timeoutMs: 10_000,
      description: 'the leader ends the reshape',
    });
    expect(await etcd.getAll().prefix(keys.reshapeRestoredPrefix).keys()).toEqual([]);
    expect((await master.status()).reshape).toBeNull();
    master.close();
  }, 90_000);
});
