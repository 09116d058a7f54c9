import { silentLogger } from '@pserver/logging';
import type { ForwardRequest } from '@pserver/proto';
import type { PushRecord } from '../shard/push-record';
import { MoveLinks } from './move-links';
import { answeringStreams, lastSeq } from '../../test/forward-streams';

const push = (trainerId: number): PushRecord => ({
  trainerId,
  step: 1,
  grads: [],
  sparse: [],
  evictions: [],
});

describe('the old shard’s side of a live move', () => {
  it('tells how far each receiver is: its copy sent, loaded, the last forward it applied, and whether it keeps up', async () => {
    let applied = 7;
    const forwards: ForwardRequest[] = [];
    // The receiver applies each forward at once; the last one is never answered.
    const links = new MoveLinks({
      index: 0,
      epoch: 3,
      appliedSeq: () => applied,
      forward: answeringStreams((batch) => {
        forwards.push(...batch);
        return lastSeq(batch) < 9 ? lastSeq(batch) : undefined;
      }),
      slice: (record) => record,
      logger: silentLogger,
    });
    const to = { index: 2, shardCount: 3 };
    expect(links.startMoving({ member: 'ps-m', address: 'ps-m:1', to })).toBe(7);
    expect(links.describe()).toEqual([
      { member: 'ps-m', to, copyBytes: 0, sentBytes: 0, loaded: false, acked: 7 },
    ]);
    links.sent('ps-m', 1024, 4096);
    links.sent('ps-other', 1, 1); // not a receiver: nothing
    expect(links.describe()[0]).toMatchObject({ copyBytes: 4096, sentBytes: 1024 });
    links.sent('ps-m', 4096, 4096);
    links.loaded('ps-m');
    expect(links.unready(['ps-m', 'ps-x'], 0)).toEqual(['ps-x']);
    expect(() => links.loaded('ps-other')).toThrow(/member ps-other receives no slices of shard 0/);

    links.replicate(++applied, push(1));
    await new Promise((resolve) => setImmediate(resolve));
    expect(forwards.map((f) => [f.seq, f.index, f.primaryEpoch, f.moveTo])).toEqual([
      [8, 0, 3, to],
    ]);
    expect(links.describe()[0]).toMatchObject({ loaded: true, sentBytes: 4096, acked: 8 });
    expect(await links.caughtUp(1_000)).toEqual({ moved: ['ps-m'], behind: [] });
    expect(links.unready(['ps-m'], 0)).toEqual([]);

    // A forward it never applies: not ready for the hand-back once it is older than the bound.
    links.replicate(++applied, push(2));
    expect(links.unready(['ps-m'], 1_000)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(links.unready(['ps-m'], 20)).toEqual(['ps-m']);
    // A receiver that has applied no forward since its copy is not ready while one waits.
    const stuck = new MoveLinks({
      index: 1,
      epoch: 3,
      appliedSeq: () => applied,
      forward: answeringStreams(() => undefined),
      slice: (record) => record,
      logger: silentLogger,
    });
    stuck.startMoving({ member: 'ps-s', address: 'ps-s:1', to });
    stuck.loaded('ps-s');
    expect(stuck.unready(['ps-s'], 1_000)).toEqual([]);
    stuck.replicate(++applied, push(3));
    expect(stuck.unready(['ps-s'], 1_000)).toEqual(['ps-s']);
    stuck.close();
    // The hand-over's bound gives it up, and status no longer shows it.
    expect(await links.caughtUp(20)).toEqual({ moved: [], behind: ['ps-m'] });
    expect(links.describe()).toEqual([]);
    links.close();
  });
});
