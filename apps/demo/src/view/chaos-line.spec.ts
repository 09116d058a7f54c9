import type { Failure } from '../run/chaos';
import { chaosLine } from './chaos-line';
import { shardLine, type DemoSnapshot } from './demo-view';

const pserverKill: Failure = {
  target: 'pserver',
  victim: 'pserver-1',
  pid: 42,
  index: 1,
  epochBefore: 10,
  killedAt: 1_000,
  takenOverAt: 2_800,
  takenOverBy: 'pserver-3',
  epochAfter: 222,
  restoredUpdates: 852,
  restoreMs: 13,
  resumedAt: 2_900,
};

describe('the story of a failure', () => {
  it('says lease epoch where a reader could take it for a training epoch', () => {
    expect(chaosLine({ kind: 'killed', failure: pserverKill })).toBe(
      'kill -9 pserver-1 (pid 42), serving shard 1 at lease epoch 10',
    );
    expect(chaosLine({ kind: 'taken over', failure: pserverKill })).toBe(
      'pserver-3 serves shard 1 (lease epoch 222) 1.8 s after the kill, from its checkpoint: ' +
        '852 updates, read in 13 ms',
    );
    expect(chaosLine({ kind: 'resumed', failure: pserverKill })).toBe(
      'every trainer is stepping again: 1.9 s lost to the kill of pserver-1',
    );
    const snapshot: Pick<DemoSnapshot, 'shards'> = {
      shards: [
        { index: 0, name: 'pserver-0', epoch: 7, restored: false },
        { index: 1, name: 'pserver-3', epoch: 222, restored: true },
      ],
    };
    expect(shardLine(snapshot)).toBe(
      '0: pserver-0 lease epoch 7 · 1: pserver-3 lease epoch 222 (restored)',
    );
  });
});
