import type { JobState } from '@pserver/coordination';
import { clusterViewOf, sameView } from './cluster-view';

const state = (overrides: Partial<JobState> = {}): JobState => ({
  desired: 3,
  blockSize: 1024,
  pservers: [
    {
      member: 'a',
      address: 'a:1',
      lease: 'La',
      createRevision: 3,
      serving: { index: 0, epoch: 7 },
    },
    { member: 'c', address: 'c:1', lease: 'Lc', createRevision: 4, serving: undefined },
  ],
  assignments: [
    {
      index: 0,
      member: 'a',
      address: 'a:1',
      lease: 'La',
      epoch: 7,
      shardCount: 3,
      blockSize: 1024,
    },
    {
      index: 2,
      member: 'c',
      address: 'c:1',
      lease: 'Lc',
      epoch: 9,
      shardCount: 3,
      blockSize: 1024,
    },
  ],
  initOwner: undefined,
  initDone: false,
  finished: false,
  revision: 42,
  replicas: 0,
  consistency: { mode: 'async' },
  replicaAssignments: [],
  reshape: undefined,
  corruptReshape: undefined,
  liveReshape: undefined,
  ...overrides,
});

describe('clusterViewOf', () => {
  it('lists every index, an unassigned one with no address and epoch 0', () => {
    expect(clusterViewOf('job', state())).toEqual({
      job: 'job',
      shardCount: 3,
      blockSize: 1024,
      shards: [
        { index: 0, address: 'a:1', shardEpoch: 7, member: 'a', serving: true, replicas: [] },
        { index: 1, address: '', shardEpoch: 0, member: '', serving: false, replicas: [] },
        { index: 2, address: 'c:1', shardEpoch: 9, member: 'c', serving: false, replicas: [] },
      ],
      revision: 42,
      initialized: false,
      finished: false,
      replicas: 0,
      consistency: { mode: 'CONSISTENCY_MODE_ASYNC', staleness: 0, replicasToAggregate: 0 },
    });
  });

  it("publishes the job's consistency mode", () => {
    const view = clusterViewOf('job', state({ consistency: { mode: 'ssp', staleness: 3 } }));
    expect(view.consistency).toEqual({
      mode: 'CONSISTENCY_MODE_BOUNDED_STALENESS',
      staleness: 3,
      replicasToAggregate: 0,
    });
  });

  it("lists each primary's replicas for its epoch, first made first", () => {
    const replica = (
      member: string,
      primaryEpoch: number,
      createRevision: number,
      inSync: boolean,
    ) => ({
      index: 0,
      member,
      address: `${member}:1`,
      lease: `L${member}`,
      createRevision,
      primaryEpoch,
      inSync,
    });
    const view = clusterViewOf(
      'job',
      state({
        replicas: 2,
        replicaAssignments: [
          replica('e', 7, 12, false),
          replica('d', 7, 11, true),
          replica('x', 5, 3, true),
        ],
      }),
    );
    expect(view.replicas).toBe(2);
    expect(view.shards[0]!.replicas).toEqual([
      { member: 'd', address: 'd:1', inSync: true },
      { member: 'e', address: 'e:1', inSync: false },
    ]);
    expect(view.shards[2]!.replicas).toEqual([]);
  });

  it('shows an index as serving only when its pserver announced that index with that epoch', () => {
    const servingOf = (pservers: JobState['pservers']): boolean[] =>
      clusterViewOf('job', state({ pservers })).shards.map((s) => s.serving);
    const a = state().pservers[0]!;
    expect(servingOf([{ ...a, serving: { index: 0, epoch: 6 } }])).toEqual([false, false, false]);
    expect(servingOf([{ ...a, serving: { index: 1, epoch: 7 } }])).toEqual([false, false, false]);
    // The same member under another lease is another process: its announcement does not count.
    expect(servingOf([{ ...a, lease: 'La2' }])).toEqual([false, false, false]);
    expect(servingOf([a])).toEqual([true, false, false]);
  });

  it('shows an assignment made under another shard count as unassigned (it is being replaced)', () => {
    const view = clusterViewOf('job', state({ desired: 4 }));
    expect(view.shards.map((s) => s.address)).toEqual(['', '', '', '']);
  });

  it('shows an index handed back during a live change of the count as it was until the count changes', () => {
    const before = clusterViewOf('job', state());
    const live = {
      from: 3,
      to: 4,
      revision: 50,
      handedBack: [0],
      receivers: [],
      copied: [],
      caughtUp: [],
    };
    // Index 0 handed back: its assignment is gone, its pserver announces nothing.
    const handedBack = state({
      assignments: state().assignments.slice(1),
      pservers: [{ ...state().pservers[0]!, serving: undefined }, state().pservers[1]!],
      liveReshape: live,
    });
    expect(clusterViewOf('job', handedBack, before).shards[0]).toEqual(before.shards[0]);
    expect(sameView(clusterViewOf('job', handedBack, before), before)).toBe(true);
    // Without a change under way, or once the count changed, the view is the state's.
    const over = { ...handedBack, liveReshape: undefined };
    expect(clusterViewOf('job', over, before).shards[0]!.address).toBe('');
    const changed = clusterViewOf('job', { ...handedBack, desired: 4 }, before);
    expect(changed.shards.map((s) => s.address)).toEqual(['', '', '', '']);
    // An index never published as assigned stays unassigned.
    const fresh = clusterViewOf(
      'job',
      state({ liveReshape: { ...live, handedBack: [1] } }),
      before,
    );
    expect(fresh.shards[1]!.address).toBe('');
  });

  it('calls two views the same when only the revision differs', () => {
    expect(
      sameView(clusterViewOf('job', state()), clusterViewOf('job', state({ revision: 50 }))),
    ).toBe(true);
    expect(
      sameView(clusterViewOf('job', state()), clusterViewOf('job', state({ initDone: true }))),
    ).toBe(false);
    const recovering = state({ pservers: [{ ...state().pservers[0]!, serving: undefined }] });
    expect(sameView(clusterViewOf('job', recovering), clusterViewOf('job', state()))).toBe(false);
  });
});
