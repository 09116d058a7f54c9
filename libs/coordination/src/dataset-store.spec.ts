import type { Etcd3 } from 'etcd3';
import { silentLogger } from '@pserver/logging';
import { DatasetStore } from './dataset-store';
import { JobKeys } from './keys';

/**
 * Just enough of etcd3's transaction builder: every commit is recorded with its puts and waits
 * until the test settles it, so the test sees what is in flight at once.
 */
class FakeEtcd {
  readonly commits: { puts: [string, string][]; settle: (succeeded: boolean) => void }[] = [];

  put(key: string): { value: (v: string) => [string, string] } {
    return { value: (value) => [key, value] };
  }

  if(): unknown {
    const builder = {
      and: () => builder,
      then: (...puts: [string, string][]) => ({
        commit: () =>
          new Promise<{ succeeded: boolean }>((resolve) =>
            this.commits.push({ puts, settle: (succeeded) => resolve({ succeeded }) }),
          ),
      }),
    };
    return builder;
  }

  /** The keys of commit `i`, without the job prefix. */
  keys(i: number): string[] {
    return this.commits[i]!.puts.map(([key]) => key.replace('/pserver/j/data/', ''));
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function setup(maxInFlight = 2): { etcd: FakeEtcd; store: DatasetStore } {
  const etcd = new FakeEtcd();
  const store = new DatasetStore(
    etcd as unknown as Etcd3,
    new JobKeys('j'),
    { key: '/leader', revision: 1 } as never,
    silentLogger,
    { maxOpsPerTxn: 3, maxInFlight, pageSize: 10 },
  );
  return { etcd, store };
}

const task = (id: number, status = 'pending'): [number, object] => [id, { status }];

describe('DatasetStore writes', () => {
  it('puts what queued while a transaction was in flight into one transaction, later values winning', async () => {
    const { etcd, store } = setup(1);
    const first = store.write([task(1)]);
    const rest = [store.write([task(2)]), store.write([task(3)]), store.write([task(2, 'done')])];
    await tick();
    expect(etcd.commits).toHaveLength(1);
    etcd.commits[0]!.settle(true);
    await first;
    await tick();
    expect(etcd.commits).toHaveLength(2);
    expect(etcd.commits[1]!.puts).toEqual([
      ['/pserver/j/data/tasks/000000000002', '{"status":"done"}'],
      ['/pserver/j/data/tasks/000000000003', '{"status":"pending"}'],
    ]);
    etcd.commits[1]!.settle(true);
    await Promise.all(rest);
  });

  it('keeps a write of a key in flight waiting, and everything queued after it', async () => {
    const { etcd, store } = setup(3);
    const writes = [store.write([task(1)])];
    await tick();
    writes.push(store.write([task(1, 'done')]), store.write([task(2)]));
    await tick();
    expect(etcd.commits).toHaveLength(1);
    etcd.commits[0]!.settle(true);
    await tick();
    expect(etcd.keys(1)).toEqual(['tasks/000000000001', 'tasks/000000000002']);
    etcd.commits[1]!.settle(true);
    await Promise.all(writes);
  });

  it('runs independent transactions side by side up to the limit', async () => {
    const { etcd, store } = setup(2);
    const writes = [store.write([task(1)])];
    await tick();
    writes.push(store.write([task(2)]));
    await tick();
    writes.push(store.write([task(3)]));
    await tick();
    expect(etcd.commits.map((_, i) => etcd.keys(i))).toEqual([
      ['tasks/000000000001'],
      ['tasks/000000000002'],
    ]);
    etcd.commits[1]!.settle(true);
    await tick();
    expect(etcd.keys(2)).toEqual(['tasks/000000000003']);
    etcd.commits[0]!.settle(true);
    etcd.commits[2]!.settle(true);
    await Promise.all(writes);
  });

  it('commits a move of the pass alone, after what came before and before what comes after', async () => {
    const { etcd, store } = setup(3);
    const writes = [store.write([task(1)])];
    await tick();
    writes.push(store.write([task(2, 'done')], 5), store.write([task(3)]));
    await tick();
    expect(etcd.commits).toHaveLength(1);
    etcd.commits[0]!.settle(true);
    await tick();
    expect(etcd.keys(1)).toEqual(['tasks/000000000002', 'pass']);
    expect(etcd.commits).toHaveLength(2);
    etcd.commits[1]!.settle(true);
    await tick();
    expect(etcd.keys(2)).toEqual(['tasks/000000000003']);
    etcd.commits[2]!.settle(true);
    await Promise.all(writes);
  });

  it('rejects the writes of a transaction whose guard failed: the term has ended', async () => {
    const { etcd, store } = setup(1);
    const write = store.write([task(1)]);
    await tick();
    etcd.commits[0]!.settle(false);
    await expect(write).rejects.toMatchObject({ code: 'MASTER_NOT_LEADER' });
  });
});
