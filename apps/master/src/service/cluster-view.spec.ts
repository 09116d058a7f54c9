import type { JobState } from '@pserver/coordination';
import { clusterViewOf, sameView } from './cluster-view';

const state = (overrides: Partial<JobState> = {}): JobState => ({
  desired: 3,
  blockSize: 1024,
  pservers: [],
  assignments: [
    { index: 0, member: 'a', address: 'a:1', lease: 'La', epoch: 7 },
    { index: 2, member: 'c', address: 'c:1', lease: 'Lc', epoch: 9 },
  ],
  initOwner: undefined,
  initDone: false,
  revision: 42,
  ...overrides,
});

describe('clusterViewOf', () => {
  it('lists every index, an unassigned one with no address and epoch 0', () => {
    expect(clusterViewOf('job', state())).toEqual({
      job: 'job',
      shardCount: 3,
      blockSize: 1024,
      shards: [
        { index: 0, address: 'a:1', shardEpoch: 7, member: 'a' },
        { index: 1, address: '', shardEpoch: 0, member: '' },
        { index: 2, address: 'c:1', shardEpoch: 9, member: 'c' },
      ],
      revision: 42,
      initialized: false,
    });
  });

  it('calls two views the same when only the revision differs', () => {
    expect(
      sameView(clusterViewOf('job', state()), clusterViewOf('job', state({ revision: 50 }))),
    ).toBe(true);
    expect(
      sameView(clusterViewOf('job', state()), clusterViewOf('job', state({ initDone: true }))),
    ).toBe(false);
  });
});
