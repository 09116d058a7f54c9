import { pendingReshapeOf, reshapeLine, shardsText } from './reshape-text';

const pending = {
  fromShardCount: 2,
  toShardCount: 3,
  sources: [0, 1],
  restored: [1],
  corrupt: '',
  live: false,
  handedBack: [],
  receivers: [],
  copied: [],
  caughtUp: [],
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

  it('a change of a running job: its receivers, their copies, and the shards handed back', () => {
    const live = {
      ...pending,
      sources: [],
      restored: [],
      live: true,
      handedBack: [1],
      receivers: [
        { index: 0, member: 'pserver-0' },
        { index: 2, member: 'pserver-2' },
      ],
      copied: [0, 1],
      caughtUp: [1],
    };
    expect(shardsText({ shardCount: 3, previousShardCount: 2, reshape: live })).toBe(
      [
        "the job's shard count is set to 3 (was 2)",
        'the job runs at 2 shards: a receiver of each new shard copies its slices while they serve, then the primaries refuse pushes together and hand their shards back, and each receiver serves its share (trainers wait meanwhile and re-run their step)',
        'reshape 2 → 3 under way: shards handed back 1; waiting for 0',
        '  receivers, copying while the old shards serve: 0 ← pserver-0, 2 ← pserver-2 (1 index without one: restored from final checkpoints)',
        '  copies loaded of old 0, 1; receivers holding the whole shard of old 1 (of every old one: no final checkpoint)',
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
          receivers: [],
          copied: [],
          caughtUp: [],
        })!,
      ),
    ).toBe('reshape: CORRUPT record (not JSON); repair or delete it with etcdctl');
  });

  it('is absent without a pending reshape', () => {
    expect(pendingReshapeOf(null)).toBeUndefined();
  });
});
