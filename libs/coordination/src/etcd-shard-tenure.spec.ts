import type { Etcd3 } from 'etcd3';
import { silentLogger, type Logger } from '@pserver/logging';
import { EtcdShardTenure } from './etcd-shard-tenure';
import { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import type { CompleteAssignment, PserverMembership } from './membership';

/**
 * The few calls `EtcdShardTenure.open` and `announceServing` make, answered in memory: no
 * checkpoint history, no reshape, an assignment watch that never fires, and `announce` answered
 * from `answers` (an error for each `'unavailable'`, as when etcd does not answer).
 */
class FakeCluster {
  readonly answers: ('unavailable' | 'taken' | 'refused')[] = [];
  readonly announcedAtMs: number[] = [];
  readonly warnings: string[] = [];
  private readonly startMs = performance.now();

  readonly client = {
    getAll: () => ({ prefix: () => ({ sort: () => ({ strings: () => Promise.resolve({}) }) }) }),
    get: () => ({ string: () => Promise.resolve(null) }),
    if: () => ({
      then: () => ({ commit: () => Promise.resolve({ responses: [] }) }),
    }),
  } as unknown as Etcd3;

  readonly lease = {
    id: 'lease-1',
    isValid: () => true,
    onExpired: () => undefined,
  } as unknown as LeaseKeeper;

  readonly membership = {
    watchAssignment: () => Promise.resolve(() => Promise.resolve()),
    announce: (): Promise<boolean> => {
      this.announcedAtMs.push(performance.now() - this.startMs);
      const answer = this.answers.shift() ?? 'taken';
      if (answer === 'unavailable') return Promise.reject(new Error('etcd is unavailable'));
      return Promise.resolve(answer === 'taken');
    },
  } as unknown as PserverMembership;

  readonly logger: Logger = {
    ...silentLogger,
    warn: (msg: string) => void this.warnings.push(msg),
  };
}

const assignment: CompleteAssignment = {
  index: 0,
  epoch: 7,
  member: 'ps-0',
  address: 'ps-0:1',
  lease: 'lease-1',
  shardCount: 1,
  blockSize: 8,
};

async function opened(cluster: FakeCluster): Promise<EtcdShardTenure> {
  return EtcdShardTenure.open(
    cluster.client,
    new JobKeys('job'),
    cluster.lease,
    cluster.membership,
    assignment,
    cluster.logger,
  );
}

/** Whether `promise` has settled, without waiting for it. */
function settled(promise: Promise<unknown>): () => boolean {
  let done = false;
  void promise.finally(() => (done = true));
  return () => done;
}

beforeEach(() => {
  jest.useFakeTimers();
});

afterEach(() => {
  jest.useRealTimers();
});

describe('EtcdShardTenure.announceServing', () => {
  it('tries again every 200 ms while etcd does not answer, until etcd takes it', async () => {
    const cluster = new FakeCluster();
    cluster.answers.push('unavailable', 'unavailable', 'taken');
    const tenure = await opened(cluster);
    const done = settled(tenure.announceServing());
    await jest.advanceTimersByTimeAsync(400);
    expect(done()).toBe(true);
    expect(cluster.announcedAtMs).toEqual([0, 200, 400]);
    expect(cluster.warnings).toEqual([
      'announcing the served shard failed; retrying',
      'announcing the served shard failed; retrying',
    ]);
    expect(tenure.holds()).toBe(true);
  });

  it('ends the tenure when etcd refuses the announcement', async () => {
    const cluster = new FakeCluster();
    cluster.answers.push('refused');
    const tenure = await opened(cluster);
    await tenure.announceServing();
    expect(tenure.holds()).toBe(false);
    expect(tenure.lost?.reason).toBe('assign/0 is no longer held with epoch 7');
  });

  it('stops at once, between two attempts, when the tenure is closed', async () => {
    const cluster = new FakeCluster();
    cluster.answers.push(...Array<'unavailable'>(100).fill('unavailable'));
    const tenure = await opened(cluster);
    const done = settled(tenure.announceServing());
    await jest.advanceTimersByTimeAsync(250);
    expect(cluster.announcedAtMs).toEqual([0, 200]);
    await tenure.close();
    // Time does not move: the wait ends on the close itself, not on its timer.
    await jest.advanceTimersByTimeAsync(0);
    expect(done()).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(cluster.announcedAtMs).toEqual([0, 200]);
  });

  it('stops at once when the tenure is lost meanwhile', async () => {
    const cluster = new FakeCluster();
    cluster.answers.push(...Array<'unavailable'>(100).fill('unavailable'));
    const tenure = await opened(cluster);
    const done = settled(tenure.announceServing());
    await jest.advanceTimersByTimeAsync(50);
    tenure.lose('assign/0 was deleted');
    await jest.advanceTimersByTimeAsync(0);
    expect(done()).toBe(true);
    expect(cluster.announcedAtMs).toEqual([0]);
  });
});
