import type { Etcd3 } from 'etcd3';
import { silentLogger, type Logger } from '@pserver/logging';
import type { ReplicaAssignment } from './job-state';
import { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import type { CompleteAssignment } from './membership';
import { ReplicaTenure } from './replica-tenure';

const replica: ReplicaAssignment = {
  index: 0,
  member: 'ps-1',
  address: 'ps-1:1',
  lease: 'lease-1',
  createRevision: 5,
  primaryEpoch: 7,
  inSync: false,
};

const primary: CompleteAssignment = {
  index: 0,
  member: 'ps-0',
  address: 'ps-0:1',
  lease: 'lease-0',
  epoch: 7,
  shardCount: 1,
  blockSize: 8,
};

/**
 * The calls `ReplicaTenure.open` and `markInSync` make, answered in memory: the replica's key as
 * made, a watch that never fires, and each guarded write answered from `answers` (an error for
 * each `'unavailable'`, as when etcd does not answer).
 */
class FakeEtcd {
  readonly answers: ('unavailable' | 'written' | 'refused')[] = [];
  readonly writtenAtMs: number[] = [];
  readonly warnings: string[] = [];
  private readonly startMs = performance.now();

  private readonly txn = {
    and: () => this.txn,
    then: () => this.txn,
    commit: (): Promise<{ succeeded: boolean }> => {
      this.writtenAtMs.push(performance.now() - this.startMs);
      const answer = this.answers.shift() ?? 'written';
      if (answer === 'unavailable') return Promise.reject(new Error('etcd is unavailable'));
      return Promise.resolve({ succeeded: answer === 'written' });
    },
  };

  readonly client = {
    watch: () => ({
      key: () => ({
        create: () => Promise.resolve({ on: () => undefined, cancel: () => Promise.resolve() }),
      }),
    }),
    get: () => ({
      exec: () => Promise.resolve({ kvs: [{ create_revision: String(replica.createRevision) }] }),
    }),
    if: () => this.txn,
    put: () => ({ value: () => ({ lease: () => ({}) }) }),
  } as unknown as Etcd3;

  readonly lease = {
    id: 'lease-1',
    isValid: () => true,
    onExpired: () => undefined,
  } as unknown as LeaseKeeper;

  readonly logger: Logger = {
    ...silentLogger,
    warn: (msg: string) => void this.warnings.push(msg),
  };

  open(): Promise<ReplicaTenure> {
    return ReplicaTenure.open(
      this.client,
      new JobKeys('job'),
      this.lease,
      replica,
      primary,
      this.logger,
    );
  }
}

/** The value of `promise` once it settled; undefined while it has not. */
function settled<T>(promise: Promise<T>): () => { value: T } | undefined {
  let outcome: { value: T } | undefined;
  void promise.then((value) => (outcome = { value }));
  return () => outcome;
}

beforeEach(() => {
  jest.useFakeTimers();
});

afterEach(() => {
  jest.useRealTimers();
});

describe('ReplicaTenure.markInSync', () => {
  it('tries again every 200 ms while etcd does not answer, until the mark is written', async () => {
    const etcd = new FakeEtcd();
    etcd.answers.push('unavailable', 'written');
    const tenure = await etcd.open();
    const marked = settled(tenure.markInSync());
    await jest.advanceTimersByTimeAsync(200);
    expect(marked()).toEqual({ value: true });
    expect(etcd.writtenAtMs).toEqual([0, 200]);
    expect(etcd.warnings).toEqual(['marking the replica in sync failed; retrying']);
  });

  it("answers false and ends the tenure when the key is no longer this replica's", async () => {
    const etcd = new FakeEtcd();
    etcd.answers.push('refused');
    const tenure = await etcd.open();
    await expect(tenure.markInSync()).resolves.toBe(false);
    expect(tenure.lost).toBe(
      `${new JobKeys('job').replica(0, 'ps-1')} is no longer this replica's`,
    );
    expect(tenure.holds()).toBe(false);
  });

  it('answers false at once, between two attempts, when the tenure is closed', async () => {
    const etcd = new FakeEtcd();
    etcd.answers.push(...Array<'unavailable'>(100).fill('unavailable'));
    const tenure = await etcd.open();
    const marked = settled(tenure.markInSync());
    await jest.advanceTimersByTimeAsync(250);
    expect(etcd.writtenAtMs).toEqual([0, 200]);
    await tenure.close();
    // Time does not move: the wait ends on the close itself, not on its timer.
    await jest.advanceTimersByTimeAsync(0);
    expect(marked()).toEqual({ value: false });
    expect(jest.getTimerCount()).toBe(0);
  });
});
