import { checksumAlgorithm, type CheckpointMeta } from '@pserver/checkpoint';
import { reshapeStatusOf } from './reshape-status';

const meta = (index: number): CheckpointMeta => ({
  uuid: `u${index}`,
  path: `shard-${index}/e5-s1-u${index}.ckpt`,
  size: 10,
  checksumAlgorithm,
  checksum: '0a0b0c0d',
  timestampNs: '1',
  shardEpoch: 5,
  index,
  seq: 1,
  updatesApplied: 1,
  formatVersion: 1,
  chain: [],
});

describe('reshapeStatusOf', () => {
  it('is absent when no reshape is pending', () => {
    expect(reshapeStatusOf({ reshape: undefined, corruptReshape: undefined })).toBeUndefined();
  });

  it('gives the counts, the old indices restored from and the new ones restored, ascending', () => {
    const reshape = {
      from: 4,
      to: 2,
      sources: new Map([
        [3, meta(3)],
        [0, meta(0)],
      ]),
      revision: 77,
      // A mark past the new count is not one of its indices.
      restored: [1, 3],
    };
    expect(reshapeStatusOf({ reshape, corruptReshape: undefined })).toEqual({
      fromShardCount: 4,
      toShardCount: 2,
      sources: [0, 3],
      restored: [1],
      corrupt: '',
      live: false,
      handedBack: [],
      receivers: [],
      copied: [],
      caughtUp: [],
    });
  });

  it('says why a record that cannot be read is corrupt', () => {
    expect(reshapeStatusOf({ reshape: undefined, corruptReshape: 'not JSON (x)' })).toEqual({
      fromShardCount: 0,
      toShardCount: 0,
      sources: [],
      restored: [],
      corrupt: 'not JSON (x)',
      live: false,
      handedBack: [],
      receivers: [],
      copied: [],
      caughtUp: [],
    });
  });

  it('says a change asked of the running job is being handed back: which old indices were, who receives each new one, and what the old primaries said of the copies', () => {
    const liveReshape = {
      from: 3,
      to: 4,
      revision: 90,
      handedBack: [0, 2],
      // A receiver or a mark past its count is not one of its indices.
      receivers: [
        { index: 0, member: 'pserver-0' },
        { index: 3, member: 'pserver-3' },
        { index: 4, member: 'pserver-9' },
      ],
      copied: [0, 1, 2, 3],
      caughtUp: [0, 2],
    };
    expect(reshapeStatusOf({ reshape: undefined, corruptReshape: undefined, liveReshape })).toEqual(
      {
        fromShardCount: 3,
        toShardCount: 4,
        sources: [],
        restored: [],
        corrupt: '',
        live: true,
        handedBack: [0, 2],
        receivers: [
          { index: 0, member: 'pserver-0' },
          { index: 3, member: 'pserver-3' },
        ],
        copied: [0, 1, 2],
        caughtUp: [0, 2],
      },
    );
  });
});
