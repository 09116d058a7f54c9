import { pendingReshapeOf, reshapeLine, shardsText } from './reshape-text';

const pending = {
  fromShardCount: 2,
  toShardCount: 3,
  sources: [0, 1],
  restored: [1],
  corrupt: '',
  live: false,
  handedBack: [],
};

describe('shardsText', () => {
  it('a change before initialization: the counts', () => {
    expect(shardsText({ shardCount: 3, previousShardCount: 2, reshape: null })).toBe(
      "the job's shard count is set to 3 (was 2)\n",
    );
  });

  it('a change of an initialized job: what to do next, and the reshape pending', () => {
    expect(
      shardsText({ shardCount: 3, previousShardCount: 2, reshape: { ...pending, restored: [] } }),
    ).toBe(
      [
        "the job's shard count is set to 3 (was 2)",
        'its checkpoints were written by 2 shards: start 3 pservers; each restores its share of them before it serves',
        'reshape 2 → 3 pending: restored none; waiting for 0, 1, 2 (from the checkpoints of old indices 0, 1)',
        '',
      ].join('\n'),
    );
  });

  it('a change of a running job: its shards handed back first, and which were', () => {
    const live = { ...pending, sources: [], restored: [], live: true, handedBack: [1] };
    expect(shardsText({ shardCount: 3, previousShardCount: 2, reshape: live })).toBe(
      [
        "the job's shard count is set to 3 (was 2)",
        "the job runs at 2 shards: each primary commits a final checkpoint and hands its shard back, then 3 of the job's pservers each restore their share and serve (trainers wait meanwhile and re-run their step)",
        'reshape 2 → 3 under way: shards handed back 1; waiting for 0 (each commits a final checkpoint first)',
        '',
      ].join('\n'),
    );
  });

  it('the same count: nothing changed (and a reshape to it still pending)', () => {
    expect(shardsText({ shardCount: 3, previousShardCount: 3, reshape: pending })).toBe(
      [
        "the job's shard count is 3 already: nothing changed",
        'reshape 2 → 3 pending: restored 1; waiting for 0, 2 (from the checkpoints of old indices 0, 1)',
        '',
      ].join('\n'),
    );
  });
});

describe('reshapeLine', () => {
  it('says when no old index had a checkpoint, and when the record is corrupt', () => {
    expect(reshapeLine(pendingReshapeOf({ ...pending, sources: [], restored: [] })!)).toBe(
      'reshape 2 → 3 pending: restored none; waiting for 0, 1, 2 (no old index had a checkpoint)',
    );
    expect(
      reshapeLine(
        pendingReshapeOf({
          fromShardCount: 0,
          toShardCount: 0,
          sources: [],
          restored: [],
          corrupt: 'not JSON',
          live: false,
          handedBack: [],
        })!,
      ),
    ).toBe('reshape: CORRUPT record (not JSON); repair or delete it with etcdctl');
  });

  it('is absent without a pending reshape', () => {
    expect(pendingReshapeOf(null)).toBeUndefined();
  });
});
