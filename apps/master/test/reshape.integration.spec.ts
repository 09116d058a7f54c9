import { status } from '@grpc/grpc-js';
import { connect } from '@pserver/client';
import { connectEtcd, JobKeys, type EtcdClient } from '@pserver/coordination';
import { RpcError } from '@pserver/rpc';
import { LocalCluster, MasterDriver, stopAllProcesses, waitFor } from '@pserver/testing';

// A change of an initialized job's shard count through a real master, asked while the job runs:
// its primaries hand their shards back (Status says so), the count changes (the record holds the
// metas they committed), the pservers restore their shares, and the leader ends the reshape once
// every index of the new count did — the last one once a third pserver joins.
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

  it('changes while the job runs: handed back, then restored; Status shows each phase until every index restored', async () => {
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
    // Asked of the running job: its primaries hand their shards back first.
    const answer = await master.setDesiredShards(3);
    expect(answer).toMatchObject({
      shardCount: 3,
      previousShardCount: 2,
      reshape: { fromShardCount: 2, toShardCount: 3, live: true, sources: [], restored: [] },
    });
    // Every index handed back with a final checkpoint: the count changed, and the two pservers,
    // spares again, restored their shares of indices 0 and 1; index 2 waits for a third pserver.
    const pending = await waitFor(
      async () => {
        const reshape = (await master.status()).reshape;
        return reshape && !reshape.live && reshape.restored.length === 2 ? reshape : undefined;
      },
      { timeoutMs: 30_000, description: 'indices 0 and 1 of 3 restored' },
    );
    expect(pending).toEqual({
      fromShardCount: 2,
      toShardCount: 3,
      sources: [0, 1],
      restored: [0, 1],
      corrupt: '',
      live: false,
      handedBack: [],
      receivers: [],
      copied: [],
      caughtUp: [],
    });
    expect(await etcd.get(keys.liveReshape).exists()).toBe(false);
    expect(await etcd.getAll().prefix(keys.handedBackPrefix).keys()).toEqual([]);
    expect(JSON.parse((await etcd.get(keys.reshape).string())!)).toMatchObject({ from: 2, to: 3 });
    expect((await master.clusterView()).shardCount).toBe(3);

    const again = await rejection(master.setDesiredShards(4));
    expect(again).toMatchObject({
      status: status.FAILED_PRECONDITION,
      code: 'MASTER_RESHAPE_PENDING',
    });
    expect(again.message).toContain('index 2 of 3 have not restored');

    // A third pserver restores the last share: the leader ends the reshape.
    await cluster.startPserver();
    await waitFor(async () => !(await etcd.get(keys.reshape).exists()), {
      timeoutMs: 30_000,
      description: 'the leader ends the reshape',
    });
    expect(await etcd.getAll().prefix(keys.reshapeRestoredPrefix).keys()).toEqual([]);
    expect((await master.status()).reshape).toBeNull();
    // The model is the one initialized, read at 3 shards.
    const reader = await connect({ master: cluster.masterAddresses, initializer: false });
    try {
      const { w } = await reader.getParams(['w'], Float32Array);
      expect(Array.from(w!)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    } finally {
      await reader.close();
    }
    master.close();
  }, 90_000);
});
