import { checksumAlgorithm, type CheckpointMeta } from '@pserver/checkpoint';
import { consistencyFromStored } from './consistency';
import type { JobState } from './job-state';
import { reshapeRefusal } from './master-reshape';
import {
  encodeLiveReshape,
  encodeReshape,
  indexList,
  notHandedBack,
  parseLiveReshape,
  parseReshape,
  unrestoredIndices,
  type PendingReshape,
} from './reshape';

const meta = (index: number, seq: number, chain: CheckpointMeta['chain'] = []): CheckpointMeta => ({
  uuid: `u${index}-${seq}`,
  path: `shard-${index}/e5-s${seq}-u.ckpt`,
  size: 1000 + seq,
  checksumAlgorithm,
  checksum: '0a0b0c0d',
  timestampNs: '1700000000123456789',
  shardEpoch: 5,
  index,
  seq,
  updatesApplied: 40 + seq,
  formatVersion: 1,
  chain,
});

const state = (overrides: Partial<JobState> = {}): JobState => ({
  desired: 2,
  blockSize: 8,
  replicas: 0,
  consistency: consistencyFromStored(undefined),
  pservers: [],
  assignments: [],
  replicaAssignments: [],
  initOwner: 1,
  initDone: true,
  finished: false,
  reshape: undefined,
  corruptReshape: undefined,
  liveReshape: undefined,
  revision: 10,
  ...overrides,
});

describe('the reshape record', () => {
  it('round-trips every source meta (a delta with its chain too) with the counts', () => {
    const delta = meta(2, 4, [
      { uuid: 'base', path: 'shard-2/e5-s1-base.ckpt', size: 9000, checksum: '11223344' },
    ]);
    const sources = new Map([
      [2, delta],
      [0, meta(0, 3)],
    ]);
    const value = encodeReshape({ from: 3, to: 5, sources });
    const json = JSON.parse(value) as { sources: Record<string, { checksum: string }> };
    // Proto3 JSON, sorted by index; an index that never committed is absent.
    expect(Object.keys(json.sources)).toEqual(['0', '2']);
    expect(json.sources['0']!.checksum).toBe(Buffer.from('0a0b0c0d', 'hex').toString('base64'));
    const parsed = parseReshape(value);
    expect(parsed).toMatchObject({ from: 3, to: 5 });
    expect([...parsed.sources]).toEqual([
      [0, meta(0, 3)],
      [2, delta],
    ]);
  });

  it('round-trips the indices a live move gave their receivers, and has none otherwise', () => {
    const moved = new Map([
      [2, 'pserver-4'],
      [0, 'pserver-0'],
    ]);
    const value = encodeReshape({ from: 2, to: 3, sources: new Map(), moved });
    expect(JSON.parse(value)).toMatchObject({ moved: { '0': 'pserver-0', '2': 'pserver-4' } });
    expect([...parseReshape(value).moved!]).toEqual([
      [0, 'pserver-0'],
      [2, 'pserver-4'],
    ]);
    expect(parseReshape(encodeReshape({ from: 2, to: 3, sources: new Map() })).moved).toBe(
      undefined,
    );
  });

  it.each([
    ['{"from":2,"to":3,"sources":{},"moved":{"3":"m"}}', /moved: "3" is not an index below 3/],
    ['{"from":2,"to":3,"sources":{},"moved":[]}', /moved: an object/],
    ['{', /not JSON/],
    ['[]', /from: a shard count/],
    ['{"from":0,"to":2,"sources":{}}', /from: a shard count ≥ 1, got 0/],
    ['{"from":2,"to":1.5,"sources":{}}', /to: a shard count ≥ 1, got 1.5/],
    ['{"from":2,"to":3}', /sources: an object/],
    ['{"from":2,"to":3,"sources":{"2":{}}}', /"2" is not an index below 2/],
    ['{"from":2,"to":3,"sources":{"01":{}}}', /"01" is not an index below 2/],
    ['{"from":2,"to":3,"sources":{"1":{"path":"x"}}}', /sources\[1\]: not a checkpoint meta/],
  ])('refuses %s, saying what is wrong', (value, message) => {
    expect(() => parseReshape(value)).toThrow(message);
  });

  it('refuses a source whose meta is of another index', () => {
    const value = encodeReshape({ from: 2, to: 1, sources: new Map([[1, meta(0, 3)]]) });
    expect(() => parseReshape(value)).toThrow(
      'sources[1]: the meta is of index 0 (shard-0/e5-s3-u.ckpt)',
    );
  });
});

describe('the progress of a reshape', () => {
  it('lists the indices of the new count without a restored mark (marks past the count do not count)', () => {
    expect(unrestoredIndices({ to: 4, restored: [0, 2, 7] })).toEqual([1, 3]);
    expect(unrestoredIndices({ to: 2, restored: [1, 0] })).toEqual([]);
  });

  it('names at most ten indices', () => {
    expect(indexList([1, 2])).toBe('1, 2');
    expect(indexList(Array.from({ length: 13 }, (_, i) => i))).toBe(
      '0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 3 more',
    );
  });
});

describe('the live reshape record', () => {
  it('round-trips, and lists the old indices not handed back yet', () => {
    expect(parseLiveReshape(encodeLiveReshape({ from: 2, to: 5 }))).toEqual({ from: 2, to: 5 });
    expect(notHandedBack({ from: 4, handedBack: [0, 3] })).toEqual([1, 2]);
  });

  it('says what is wrong with a value that is not one', () => {
    expect(() => parseLiveReshape('{"from":0,"to":2}')).toThrow('from: a shard count ≥ 1, got 0');
    expect(() => parseLiveReshape('[')).toThrow(/not JSON/);
  });
});

describe('reshapeRefusal', () => {
  const pending: PendingReshape = {
    from: 2,
    to: 3,
    sources: new Map([[0, meta(0, 1)]]),
    revision: 40,
    restored: [1],
  };

  it('allows a change of an initialized job that is down with nothing pending', () => {
    expect(reshapeRefusal(3, state())).toBeUndefined();
  });

  it('refuses while a reshape is pending, naming the indices not restored yet', () => {
    expect(reshapeRefusal(4, state({ desired: 3, reshape: pending }))).toMatchObject({
      code: 'MASTER_RESHAPE_PENDING',
      message: expect.stringContaining(
        'the change from 2 to 3 shards is still pending: indices 0, 2 of 3 have not restored',
      ),
    });
  });

  it('refuses while a change asked of the running job is being handed back, naming the indices left', () => {
    const liveReshape = {
      from: 3,
      to: 4,
      revision: 50,
      handedBack: [1],
      receivers: [],
      copied: [],
      caughtUp: [],
    };
    expect(reshapeRefusal(2, state({ desired: 3, liveReshape }))).toMatchObject({
      code: 'MASTER_RESHAPE_PENDING',
      message: expect.stringContaining(
        'the change from 3 to 4 shards is under way: indices 0, 2 of 3 have not been handed back yet',
      ),
    });
  });

  it('refuses while the record is corrupt, saying why', () => {
    expect(reshapeRefusal(4, state({ corruptReshape: 'not JSON (x)' }))).toMatchObject({
      code: 'MASTER_RESHAPE_PENDING',
      message: expect.stringContaining('is unreadable: not JSON (x)'),
    });
  });

  it('refuses while a pserver holds a shard or a replica, naming them', () => {
    const held = state({
      assignments: [
        {
          index: 1,
          member: 'ps-b',
          address: 'b:1',
          lease: 'Lb',
          epoch: 9,
          shardCount: 2,
          blockSize: 8,
        },
      ],
      replicaAssignments: [
        {
          index: 0,
          member: 'ps-c',
          address: 'c:1',
          lease: 'Lc',
          createRevision: 11,
          primaryEpoch: 7,
          inSync: true,
        },
      ],
    });
    expect(reshapeRefusal(3, held)).toMatchObject({
      code: 'MASTER_SHARDS_IN_USE',
      message: expect.stringContaining(
        'pservers still hold shards 1 (ps-b), a replica of 0 (ps-c); stop them first',
      ),
    });
  });
});
