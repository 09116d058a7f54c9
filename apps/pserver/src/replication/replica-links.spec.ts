import type { ReplicaAssignment } from '@pserver/coordination';
import { silentLogger } from '@pserver/logging';
import { ReplicaLinks } from './replica-links';
import { answeringStreams, lastSeq } from '../../test/forward-streams';

const replica: ReplicaAssignment = {
  index: 0,
  member: 'r',
  address: 'r:1',
  lease: 'L-r',
  createRevision: 40,
  primaryEpoch: 7,
  inSync: false,
};
const push = { trainerId: 1, step: 1, grads: [], sparse: [], evictions: [] };

/** Resolves after `ms`, or says it is still pending. */
const settledWithin = (promise: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);

describe('a replica that leaves a push unapplied', () => {
  let links: ReplicaLinks;
  afterEach(() => links.close());

  /** A primary with one waited replica that never answers a forward. */
  function primaryWithStuckReplica(
    drop: (r: ReplicaAssignment) => Promise<boolean>,
    timeoutMs = 100,
  ) {
    let seq = 0;
    links = new ReplicaLinks({
      index: 0,
      epoch: 7,
      appliedSeq: () => seq,
      forward: answeringStreams(() => undefined),
      logger: silentLogger,
      lag: { timeoutMs, drop },
    });
    links.update([replica]);
    links.loaded('r', links.startFollowing('r'));
    return { replicate: () => links.replicate(++seq, push) };
  }

  it('is waited for until its key is deleted, then no longer', async () => {
    let commit: (dropped: boolean) => void = () => undefined;
    const drop = jest.fn(() => new Promise<boolean>((resolve) => (commit = resolve)));
    const { replicate } = primaryWithStuckReplica(drop);
    const waiting = replicate();
    // Past the timeout the drop is asked for, once; the push still waits for it to commit.
    expect(await settledWithin(waiting, 250)).toBe(false);
    expect(drop.mock.calls).toEqual([[replica]]);
    commit(true);
    expect(await settledWithin(waiting, 100)).toBe(true);
    expect(links.describe()).toEqual([]);
  });

  it('is still waited for when etcd refuses the drop, and the drop is asked for again', async () => {
    const drop = jest.fn(() => Promise.resolve(false));
    const { replicate } = primaryWithStuckReplica(drop);
    const waiting = replicate();
    expect(await settledWithin(waiting, 300)).toBe(false);
    expect(drop.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(links.describe().map((l) => l.member)).toEqual(['r']);
  });

  it('is dropped at most a quarter second past the timeout', () => {
    jest.useFakeTimers();
    try {
      const drop = jest.fn(() => new Promise<boolean>(() => undefined));
      const { replicate } = primaryWithStuckReplica(drop, 10_000);
      // The push arrives between two checks, as a real one does.
      jest.advanceTimersByTime(1_000);
      void replicate();
      jest.advanceTimersByTime(9_990);
      expect(drop).not.toHaveBeenCalled();
      jest.advanceTimersByTime(260);
      expect(drop.mock.calls).toEqual([[replica]]);
    } finally {
      links.close();
      jest.useRealTimers();
    }
  });

  it('is not dropped while it keeps up', async () => {
    const drop = jest.fn(() => Promise.resolve(true));
    let seq = 0;
    links = new ReplicaLinks({
      index: 0,
      epoch: 7,
      appliedSeq: () => seq,
      forward: answeringStreams(lastSeq),
      logger: silentLogger,
      lag: { timeoutMs: 100, drop },
    });
    links.update([replica]);
    links.loaded('r', links.startFollowing('r'));
    for (let k = 0; k < 20; k++) {
      await links.replicate(++seq, push);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    expect(drop).not.toHaveBeenCalled();
  });
});

describe('a forward', () => {
  it('carries a closed SYNC step and the marks moved before it', async () => {
    const sent: unknown[] = [];
    let seq = 0;
    const links = new ReplicaLinks({
      index: 0,
      epoch: 7,
      appliedSeq: () => seq,
      forward: answeringStreams((forwards) => {
        sent.push(...forwards);
        return lastSeq(forwards);
      }),
      logger: silentLogger,
    });
    try {
      links.update([replica]);
      links.loaded('r', links.startFollowing('r'));
      const marks = [{ trainerId: 3, step: 4, updatedUnixMs: 1_000 }];
      await links.replicate(++seq, {
        ...push,
        trainerId: 0,
        step: 5,
        closedStep: { contributors: [1, 2] },
        marks,
      });
      await links.replicate(++seq, push);
      expect(sent.slice(-2)).toEqual([
        expect.objectContaining({ seq: 1, step: 5, closedStep: { contributors: [1, 2] }, marks }),
        expect.objectContaining({ seq: 2, step: 1, closedStep: null, marks: [] }),
      ]);
    } finally {
      links.close();
    }
  });
});
