import type { Failure } from '../run/chaos';
import type { Growth } from '../run/live-growth';
import { chaosLine, growthSummary } from './chaos-line';
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

describe('the story of the chaos', () => {
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

  it('tells the growth from the ask to training at the new count, times from the ask', () => {
    const growth: Growth = {
      from: 3,
      to: 4,
      started: [{ name: 'pserver-4', pid: 77 }],
      askedOf: 'master-0',
      askedAt: 10_000,
      handedBackAt: 10_350,
      servedAt: 11_420,
      restoreMs: 38,
      resumedAt: 11_600,
      audit: { acknowledged: 212, lost: 0, doubled: 0 },
    };
    expect(chaosLine({ kind: 'growth asked', growth })).toBe(
      'grow the job from 3 to 4 shards while it trains: started pserver-4 (pid 77), then asked master-0 for 4 shards',
    );
    expect(chaosLine({ kind: 'growth served', growth })).toBe(
      '4 shards serve 1.4 s after the ask: the 3 old ones handed back after 0.3 s, ' +
        'each share restored from their checkpoints in 38 ms or less',
    );
    expect(chaosLine({ kind: 'growth served', growth: { ...growth, moved: 3 } })).toBe(
      '4 shards serve 1.4 s after the ask: the 3 old ones handed back after 0.3 s, ' +
        '3 of 4 shares copied live, the others restored from their checkpoints in 38 ms or less',
    );
    expect(
      chaosLine({ kind: 'growth served', growth: { ...growth, moved: 4, restoreMs: undefined } }),
    ).toBe(
      '4 shards serve 1.4 s after the ask: the 3 old ones handed back after 0.3 s, 4 of 4 shares copied live',
    );
    expect(chaosLine({ kind: 'growth resumed', growth })).toBe(
      'every trainer is stepping again: 1.6 s from the ask to training on 4 shards',
    );
    expect(chaosLine({ kind: 'growth audited', growth })).toBe(
      'acknowledged updates lost across the growth: 0 of 212 (applied twice: 0)',
    );
    expect(growthSummary(growth)).toBe(
      '  grow 3 → 4 shards: serving at 4 after 1.4 s; training resumed after 1.6 s; ' +
        'acknowledged updates lost across it: 0 of 212 (applied twice: 0)',
    );
    // Unaudited (ctr, sync), and never resumed: the demo then falls short.
    expect(growthSummary({ ...growth, audit: undefined, resumedAt: undefined })).toBe(
      '  grow 3 → 4 shards: serving at 4 after 1.4 s; training did not resume',
    );
    const snapshot: Pick<DemoSnapshot, 'shards'> = {
      shards: [
        { index: 0, name: 'pserver-2', epoch: 610, restored: false, reshapedFrom: 3 },
        { index: 3, name: 'pserver-4', epoch: 612, restored: false, reshapedFrom: 3 },
      ],
    };
    expect(shardLine(snapshot)).toBe(
      '0: pserver-2 lease epoch 610 (from 3 shards) · 3: pserver-4 lease epoch 612 (from 3 shards)',
    );
  });
});
