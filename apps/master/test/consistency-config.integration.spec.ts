import {
  appBundle,
  MasterDriver,
  spawnNode,
  startEtcd,
  startMasterProcess,
  stopAllProcesses,
  waitFor,
  type EtcdServer,
} from '@pserver/testing';

// The job's consistency mode: the master's --consistency, fixed the first time a master leads the
// job and published in the view; flags that cannot work refuse to start.

let etcd: EtcdServer;

beforeAll(async () => {
  etcd = await startEtcd();
});

afterAll(async () => {
  await stopAllProcesses();
});

describe('the master’s --consistency', () => {
  it.each([
    [['--consistency', 'bsp'], "expected async, sync or ssp:<staleness>, got 'bsp'"],
    [['--replicas-to-aggregate', '2'], '--replicas-to-aggregate is for --consistency sync'],
  ])('refuses %j with a message that names it', async (args, message) => {
    const master = spawnNode(appBundle('master'), [...etcd.clientArgs, ...args], {
      name: 'master-bad-consistency',
    });
    expect((await master.exited).code).not.toBe(0);
    expect(master.lines.join('\n')).toContain(message);
  });

  it('is fixed when the job first starts: a later master with another mode keeps the job’s', async () => {
    const args = [...etcd.clientArgs, '--job', 'consistency-fixed'];
    const first = await startMasterProcess([...args, '--consistency', 'ssp:2'], {
      name: 'master-ssp',
    });
    const driver = new MasterDriver(first.address);
    const ssp = {
      mode: 'CONSISTENCY_MODE_BOUNDED_STALENESS',
      staleness: 2,
      replicasToAggregate: 0,
    };
    try {
      await waitFor(async () => (await driver.clusterView()).consistency?.mode, {
        timeoutMs: 20_000,
        description: 'a view from the leader',
      });
      expect((await driver.clusterView()).consistency).toEqual(ssp);
    } finally {
      driver.close();
      await first.process.stop();
    }

    const second = await startMasterProcess([...args, '--consistency', 'sync'], {
      name: 'master-sync',
    });
    const again = new MasterDriver(second.address);
    try {
      await second.process.waitForLog(
        (entry) => String(entry.msg).includes('--consistency sync is ignored'),
        { timeoutMs: 20_000 },
      );
      expect((await again.clusterView()).consistency).toEqual(ssp);
    } finally {
      again.close();
      await second.process.stop();
    }
  });
});
