import { FakeProcess } from './fake-process';
import { servingNow } from './serving-now';

const pserver = (name: string): { process: FakeProcess } => ({
  process: new FakeProcess(name, 1),
});
const serving = (at: number, index: number, shardEpoch: number, shardCount = 3) => ({
  index,
  shardEpoch,
  shardCount,
  at,
});

function serve(p: { process: FakeProcess }, line: ReturnType<typeof serving>): void {
  const { at, ...fields } = line;
  p.process.log(at, 'serving', fields);
}

describe('servingNow', () => {
  it('takes the highest lease epoch of each index among the running pservers', () => {
    const [a, b, spare] = [pserver('a'), pserver('b'), pserver('spare')];
    serve(a, serving(1_000, 0, 7));
    serve(b, serving(1_000, 1, 9));
    serve(spare, serving(5_000, 1, 40)); // took shard 1 over: b is gone or fenced
    expect([...servingNow([a, b, spare])].map(([i, s]) => [i, s.pserver, s.epoch])).toEqual([
      [0, a, 7],
      [1, spare, 40],
    ]);
    spare.process.signal('SIGKILL');
    expect(servingNow([a, b, spare]).get(1)?.pserver).toBe(b);
  });

  it('drops a tenure handed back, and serves the index again at the new count', () => {
    // Growing 2 → 3: a and b hand their shards back; b, a spare again, restores index 2 of 3.
    const [a, b, c] = [pserver('a'), pserver('b'), pserver('c')];
    serve(a, serving(1_000, 0, 7, 2));
    serve(b, serving(1_000, 1, 9, 2));
    a.process.log(6_000, 'handed the shard back', { index: 0, shardEpoch: 7 });
    b.process.log(6_000, 'handed the shard back', { index: 1, shardEpoch: 9 });
    expect(servingNow([a, b, c]).size).toBe(0);
    serve(b, serving(6_500, 2, 60, 3));
    serve(c, serving(6_600, 0, 61, 3));
    const now = servingNow([a, b, c]);
    expect([...now.keys()].sort()).toEqual([0, 2]);
    expect(now.get(2)).toMatchObject({ pserver: b, epoch: 60, shardCount: 3 });
    expect(now.get(0)).toMatchObject({ pserver: c, epoch: 61, shardCount: 3 });
  });
});
