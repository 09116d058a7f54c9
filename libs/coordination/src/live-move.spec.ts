import type { RegisteredPserver, ShardAssignment } from './job-state';
import {
  encodeFinalSeq,
  encodeReceiver,
  movedShares,
  parseFinalSeq,
  parseReceiver,
  planReceivers,
} from './live-move';

const pserver = (member: string, createRevision: number): RegisteredPserver => ({
  member,
  address: `${member}:1`,
  lease: `L-${member}`,
  createRevision,
  serving: undefined,
});
const primary = (index: number, member: string): ShardAssignment => ({
  index,
  member,
  address: `${member}:1`,
  lease: `L-${member}`,
  epoch: 10 + index,
  shardCount: 2,
  blockSize: 64,
});

describe('a live move', () => {
  it('names the primary of an index both counts have, and spares for the others, first registered first', () => {
    const state = {
      pservers: [pserver('p0', 1), pserver('p1', 2), pserver('s2', 4), pserver('s1', 3)],
      assignments: [primary(0, 'p0'), primary(1, 'p1')],
      replicaAssignments: [],
    };
    const grow = planReceivers(state, 4);
    expect([...grow].map(([k, r]) => [k, r.member, r.lease])).toEqual([
      [0, 'p0', 'L-p0'],
      [1, 'p1', 'L-p1'],
      [2, 's1', 'L-s1'],
      [3, 's2', 'L-s2'],
    ]);
    expect([...planReceivers(state, 1)].map(([k, r]) => [k, r.member])).toEqual([[0, 'p0']]);
    // No spare left: the index is restored from checkpoints instead.
    expect([...planReceivers(state, 5).keys()]).toEqual([0, 1, 2, 3]);
  });

  it('gives an index to its receiver only when every old primary said it holds its last push', () => {
    const receivers = new Map([
      [0, { member: 'p0', address: 'p0:1' }],
      [1, { member: 'p1', address: 'p1:1' }],
      [2, { member: 's1', address: 's1:1' }],
    ]);
    const finals = new Map([
      [0, { epoch: 10, seq: 41, moved: ['p0', 'p1', 's1'] }],
      [1, { epoch: 11, seq: 12, moved: ['p0', 's1'] }],
    ]);
    expect(movedShares(2, receivers, finals)).toEqual(
      new Map([
        [0, 'p0'],
        [2, 's1'],
      ]),
    );
    // An old index that did not hand back (its owner died) moves nothing.
    expect(movedShares(3, receivers, finals)).toEqual(new Map());
  });

  it('reads back what it writes, and refuses what is not a value of its own', () => {
    expect(parseReceiver(encodeReceiver({ member: 'm', address: 'a:1' }))).toEqual({
      member: 'm',
      address: 'a:1',
    });
    expect(parseFinalSeq(encodeFinalSeq({ epoch: 3, seq: 9, moved: ['b', 'a'] }))).toEqual({
      epoch: 3,
      seq: 9,
      moved: ['a', 'b'],
    });
    for (const bad of ['', '{', '{"member":1}', 'null']) expect(parseReceiver(bad)).toBeUndefined();
    for (const bad of ['{"epoch":-1,"seq":0,"moved":[]}', '{"epoch":1,"seq":2,"moved":[3]}', '[]'])
      expect(parseFinalSeq(bad)).toBeUndefined();
  });
});
