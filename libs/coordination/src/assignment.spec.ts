import { planAssignments, planReplicas, staleAssignments } from './assignment';
import type { RegisteredPserver, ReplicaAssignment, ShardAssignment } from './job-state';
import { JobKeys } from './keys';

const pserver = (
  member: string,
  createRevision: number,
  lease = `L-${member}`,
): RegisteredPserver => ({
  member,
  address: `${member}:1`,
  lease,
  createRevision,
  serving: undefined,
});
const held = (
  index: number,
  member: string,
  lease = `L-${member}`,
  shardCount = 3,
): ShardAssignment => ({
  index,
  member,
  address: `${member}:1`,
  lease,
  epoch: 10 + index,
  shardCount,
  blockSize: 64,
});

describe('planAssignments', () => {
  it('gives an index whose live receiver holds its share to that receiver, the others to the first spares', () => {
    const plan = planAssignments({
      desired: 3,
      blockSize: 64,
      pservers: [pserver('a', 1), pserver('b', 2), pserver('c', 3)],
      assignments: [],
      replicaAssignments: [],
      reshape: {
        from: 2,
        to: 3,
        sources: new Map(),
        revision: 7,
        restored: [],
        moved: new Map([
          [0, 'c'],
          [2, 'a'],
        ]),
      },
    });
    expect(plan.map((p) => [p.index, p.pserver.member])).toEqual([
      [0, 'c'],
      [2, 'a'],
      [1, 'b'],
    ]);
  });

  it('gives the lowest free indices to the pservers that registered first, and keeps the rest as spares', () => {
    const plan = planAssignments({
      desired: 2,
      blockSize: 64,
      pservers: [pserver('c', 3), pserver('a', 1), pserver('b', 2)],
      assignments: [],
      replicaAssignments: [],
    });
    expect(plan.map((p) => [p.index, p.pserver.member, p.shardCount, p.blockSize])).toEqual([
      [0, 'a', 2, 64],
      [1, 'b', 2, 64],
    ]);
  });

  it('fills only the free index, and never gives a second index to a pserver holding one', () => {
    const plan = planAssignments({
      desired: 3,
      blockSize: 64,
      pservers: [pserver('a', 1), pserver('b', 2), pserver('c', 3)],
      assignments: [held(0, 'a'), held(2, 'b')],
      replicaAssignments: [],
    });
    expect(plan.map((p) => [p.index, p.pserver.member])).toEqual([[1, 'c']]);
  });

  it('treats a member registered again under a new lease as a new pserver', () => {
    const plan = planAssignments({
      desired: 2,
      blockSize: 64,
      pservers: [pserver('a', 5, 'L-new')],
      assignments: [held(0, 'a', 'L-old')],
      replicaAssignments: [],
    });
    expect(plan.map((p) => [p.index, p.pserver.lease])).toEqual([[1, 'L-new']]);
  });

  it('assigns nothing before the job has a desired count', () => {
    expect(
      planAssignments({
        desired: undefined,
        blockSize: 64,
        pservers: [pserver('a', 1)],
        assignments: [],
        replicaAssignments: [],
      }),
    ).toEqual([]);
  });

  it('never reuses an index whose key still exists, even a stale one', () => {
    const plan = planAssignments({
      desired: 2,
      blockSize: 64,
      pservers: [pserver('a', 1), pserver('b', 2)],
      assignments: [held(0, 'x', 'L-x', 1)],
      replicaAssignments: [],
    });
    expect(plan.map((p) => [p.index, p.pserver.member])).toEqual([[1, 'a']]);
  });
});

const replica = (
  index: number,
  member: string,
  primaryEpoch: number,
  inSync: boolean,
  createRevision = 100,
): ReplicaAssignment => ({
  index,
  member,
  address: `${member}:1`,
  lease: `L-${member}`,
  createRevision,
  primaryEpoch,
  inSync,
});

describe('replicas', () => {
  const pservers = [pserver('a', 1), pserver('b', 2), pserver('c', 3), pserver('d', 4)];

  it('promotes the in-sync replica of a free index instead of giving it to a spare', () => {
    const plan = planAssignments({
      desired: 2,
      blockSize: 64,
      pservers,
      assignments: [held(1, 'b')],
      replicaAssignments: [replica(0, 'c', 10, false, 100), replica(0, 'd', 10, true, 101)],
    });
    expect(plan.map((p) => [p.index, p.pserver.member, p.promotes?.member])).toEqual([
      [0, 'd', 'd'],
    ]);
  });

  it('gives a free index without an in-sync replica to a spare, not to a replica', () => {
    const plan = planAssignments({
      desired: 2,
      blockSize: 64,
      pservers,
      assignments: [held(1, 'b')],
      replicaAssignments: [replica(0, 'a', 10, false), replica(1, 'c', 11, true)],
    });
    expect(plan.map((p) => [p.index, p.pserver.member, p.promotes])).toEqual([[0, 'd', undefined]]);
  });

  it('tops every current primary up to the job replica count from the spares left', () => {
    const state = {
      desired: 2,
      blockSize: 64,
      replicas: 1,
      pservers,
      assignments: [held(0, 'a', 'L-a', 2), held(1, 'b', 'L-b', 2)],
      // c replicates shard 0's previous primary (epoch 3): not a replica of the current one.
      replicaAssignments: [replica(0, 'c', 3, true)],
    };
    const plan = planReplicas(state, []);
    expect(plan.map((r) => [r.index, r.primaryEpoch, r.pserver.member])).toEqual([[0, 10, 'd']]);
    expect(planReplicas({ ...state, replicas: 0 }, [])).toEqual([]);
  });

  it('never makes a replica of a spare the same round gives an index', () => {
    const state = {
      desired: 2,
      blockSize: 64,
      replicas: 1,
      pservers: [pserver('a', 1), pserver('b', 2), pserver('c', 3)],
      assignments: [held(0, 'a', 'L-a', 2)],
      replicaAssignments: [],
    };
    const assigning = planAssignments(state);
    expect(assigning.map((p) => [p.index, p.pserver.member])).toEqual([[1, 'b']]);
    expect(planReplicas(state, assigning).map((r) => [r.index, r.pserver.member])).toEqual([
      [0, 'c'],
    ]);
  });
});

describe('staleAssignments', () => {
  it('names assignments made under another shard count or block size, or without them', () => {
    const current = held(0, 'a');
    const oldCount = held(1, 'b', 'L-b', 2);
    const noCount = { ...held(2, 'c'), shardCount: undefined };
    const otherBlock = { ...held(3, 'd'), blockSize: 32 };
    const stale = staleAssignments({
      desired: 3,
      blockSize: 64,
      assignments: [current, oldCount, noCount, otherBlock],
    });
    expect(stale.map((a) => a.index)).toEqual([1, 2, 3]);
  });

  it('names none before the job has a count and block size', () => {
    expect(
      staleAssignments({ desired: undefined, blockSize: 64, assignments: [held(0, 'a')] }),
    ).toEqual([]);
  });
});

describe('JobKeys', () => {
  it('puts every key under /pserver/<job>/ and parses indices back', () => {
    const keys = new JobKeys('mnist-1');
    expect(keys.assign(3)).toBe('/pserver/mnist-1/assign/3');
    expect(keys.indexOf('/pserver/mnist-1/assign/12')).toBe(12);
    expect(keys.indexOf('/pserver/mnist-1/assign/x')).toBeUndefined();
    expect(keys.replica(2, 'ps-7')).toBe('/pserver/mnist-1/replica/2/ps-7');
    expect(keys.replicaOf('/pserver/mnist-1/replica/2/ps-7')).toEqual({ index: 2, member: 'ps-7' });
    expect(keys.replicaOf('/pserver/mnist-1/replica/x/ps-7')).toBeUndefined();
    expect(keys.checkpointHistory(0, 7, 3) < keys.checkpointHistory(0, 7, 10)).toBe(true);
    expect(keys.checkpointHistory(0, 7, 99) < keys.checkpointHistory(0, 8, 1)).toBe(true);
  });

  it('refuses a job name that is not a plain word', () => {
    expect(() => new JobKeys('a/b')).toThrow('job name "a/b"');
  });
});

describe('during a live reshape', () => {
  const live = {
    from: 3,
    to: 4,
    revision: 7,
    handedBack: [0, 2],
    receivers: [],
    copied: [],
    caughtUp: [],
  };

  it('leaves an index handed back free, and assigns one whose owner died before handing it back', () => {
    const plan = planAssignments({
      desired: 3,
      blockSize: 64,
      pservers: [pserver('a', 1), pserver('b', 2)],
      assignments: [],
      replicaAssignments: [],
      liveReshape: live,
    });
    expect(plan.map((p) => [p.index, p.pserver.member])).toEqual([[1, 'a']]);
  });

  it('makes no new replica', () => {
    const state = {
      desired: 3,
      blockSize: 64,
      replicas: 1,
      pservers: [pserver('a', 1), pserver('b', 2)],
      assignments: [held(1, 'a')],
      replicaAssignments: [],
    };
    expect(planReplicas(state, []).map((r) => r.pserver.member)).toEqual(['b']);
    expect(planReplicas({ ...state, liveReshape: live }, [])).toEqual([]);
  });
});
