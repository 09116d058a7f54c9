import { Chaos, chaosPlan, type ChaosCluster, type ChaosProcess, type FailureEvent } from './chaos';
import { FakeProcess } from './fake-process';
import { LiveGrowth, type GrowthHost } from './live-growth';
import { servingNow } from './serving-now';
import { TrainingProgress } from './training-progress';

/** Two pservers and a spare for one shard, two masters; who serves and leads is set by hand. */
class FakeCluster implements ChaosCluster {
  readonly pservers = [new FakeProcess('pserver-0', 10), new FakeProcess('pserver-1', 11)];
  readonly masters = [new FakeProcess('master-0', 20), new FakeProcess('master-1', 21)];
  served = { process: this.pservers[0]!, epoch: 7 };
  leader = this.masters[0]!;

  serving(): Map<number, { pserver: { process: ChaosProcess }; epoch: number }> {
    return new Map([[0, { pserver: { process: this.served.process }, epoch: this.served.epoch }]]);
  }

  leadingMaster(): { process: ChaosProcess } | undefined {
    return this.leader.killedBy ? undefined : { process: this.leader };
  }
}

const step = (samples: number, started: number, t: number): string =>
  JSON.stringify({ event: 'step', pass: 0, loss: 1, samples, started, t });

/** A chaos whose only step is the kill of shard 0's pserver. */
const pserverKill = (cluster: FakeCluster, progress: TrainingProgress, replicas = 0): Chaos =>
  new Chaos({
    cluster,
    progress,
    victimIndex: 0,
    onEvent: () => undefined,
    kills: ['pserver'],
    replicas,
  });

describe('Chaos', () => {
  it('counts the time lost from the kill until every trainer completed a step after the takeover', () => {
    const cluster = new FakeCluster();
    const progress = new TrainingProgress(['a', 'b'], 1, 1000);
    const events: FailureEvent['kind'][] = [];
    const chaos = new Chaos({
      cluster,
      progress,
      victimIndex: 0,
      onEvent: (e) => events.push(e.kind),
    });

    // 40 % done: the pserver of shard 0 is killed; the spare serves it at a new lease epoch.
    progress.onTrainerLine('a', step(400, 0, 900));
    chaos.tick(1_000);
    expect(cluster.pservers[0]!.killedBy).toBe('SIGKILL');
    cluster.pservers[1]!.log(3_000, 'serving', { index: 0, shardEpoch: 9 });
    cluster.served = { process: cluster.pservers[1]!, epoch: 9 };
    chaos.tick(3_100);
    progress.onTrainerLine('a', step(10, 2_900, 3_200)); // began before the takeover, retried
    progress.onTrainerLine('b', step(10, 3_200, 3_400));
    chaos.tick(3_500);
    expect(chaos.failures[0]).toMatchObject({ takenOverAt: 3_000, resumedAt: 3_400 });

    // 65 % done: the leader is killed. The trainers finish the tasks they hold without it, then
    // wait for the new leader's tasks: that wait is what the kill cost.
    progress.onTrainerLine('a', step(250, 3_500, 4_900));
    chaos.tick(5_000);
    expect(cluster.masters[0]!.killedBy).toBe('SIGKILL');
    progress.onTrainerLine('a', step(10, 5_010, 5_050));
    progress.onTrainerLine('b', step(10, 5_020, 5_080));
    chaos.tick(5_100);
    cluster.leader = cluster.masters[1]!;
    cluster.masters[1]!.log(6_500, 'leading');
    chaos.tick(6_600);
    expect(chaos.failures[1]).toMatchObject({ takenOverAt: 6_500 });
    expect(chaos.failures[1]!.resumedAt).toBeUndefined(); // nobody has stepped since
    progress.onTrainerLine('b', step(10, 6_700, 6_800));
    progress.onTrainerLine('a', step(10, 6_800, 6_950));
    chaos.tick(7_000);
    expect(chaos.failures[1]).toMatchObject({ killedAt: 5_000, resumedAt: 6_950 });
    expect(events).toEqual(['killed', 'taken over', 'resumed', 'killed', 'taken over', 'resumed']);
  });

  it('with replicas, kills a pserver only once its shard has a replica in sync', () => {
    const cluster = new FakeCluster();
    const progress = new TrainingProgress(['a'], 1, 1000);
    const chaos = pserverKill(cluster, progress, 1);
    const primary = cluster.pservers[0]!;
    primary.log(100, 'a replica is in sync'); // of an earlier tenure
    primary.log(200, 'serving', { index: 0, shardEpoch: 7 });
    progress.onTrainerLine('a', step(500, 0, 900));
    chaos.tick(1_000);
    expect(primary.killedBy).toBeUndefined();
    primary.log(1_100, 'a replica is in sync');
    chaos.tick(1_200);
    expect(primary.killedBy).toBe('SIGKILL');
    expect(chaos.failures[0]).toMatchObject({ killedAt: 1_200 });
  });

  it('kills only what its plan names', () => {
    const cluster = new FakeCluster();
    const progress = new TrainingProgress(['a'], 1, 1000);
    const chaos = pserverKill(cluster, progress);
    progress.onTrainerLine('a', step(500, 0, 900));
    chaos.tick(1_000);
    progress.onTrainerLine('a', step(400, 1_000, 1_900));
    chaos.tick(2_000);
    expect(cluster.pservers[0]!.killedBy).toBe('SIGKILL');
    expect(cluster.masters[0]!.killedBy).toBeUndefined();
    expect(chaos.failures.map((f) => f.target)).toEqual(['pserver']);
  });

  it('grows the job first, and kills only once training resumed at the new count', async () => {
    const cluster = new FakeCluster();
    const progress = new TrainingProgress(['a'], 1, 1000);
    // Growing 1 → 2 shards: the pservers of the new count (one of them started by the growth).
    const newOwners = [new FakeProcess('pserver-1', 11), new FakeProcess('pserver-2', 12)];
    const host: GrowthHost = {
      runningPservers: () => 2,
      startSpare: () => Promise.resolve({ name: 'pserver-2', pid: 12 }),
      askShardCount: () => Promise.resolve('master-0'),
      serving: () => servingNow(newOwners.map((process) => ({ process }))),
      pserverProcesses: () => newOwners,
    };
    let now = 1_000;
    const growth = new LiveGrowth(
      host,
      progress,
      () => undefined,
      { from: 1, replicas: 0 },
      () => now,
    );
    const chaos = new Chaos({
      cluster,
      progress,
      victimIndex: 0,
      onEvent: () => undefined,
      kills: ['pserver'],
      growth,
    });

    // 45 % done at once: the growth (due at 20 %) comes first, and the kill (40 %) waits for it.
    progress.onTrainerLine('a', step(450, 0, 900));
    chaos.tick(now);
    await new Promise((resolve) => setImmediate(resolve));
    expect(growth.growth).toMatchObject({ askedAt: 1_000, askedOf: 'master-0' });
    now = 1_100;
    chaos.tick(now);
    expect(cluster.pservers[0]!.killedBy).toBeUndefined();

    newOwners.forEach((p, index) =>
      p.log(1_500 + index * 100, 'serving', { index, shardEpoch: 50 + index, shardCount: 2 }),
    );
    progress.onTrainerLine('a', step(10, 1_650, 1_700));
    now = 1_800;
    chaos.tick(now); // the growth is over: training resumed at 2 shards
    expect(growth.growth).toMatchObject({ servedAt: 1_600, resumedAt: 1_700 });
    expect(cluster.pservers[0]!.killedBy).toBeUndefined();
    chaos.tick(1_900);
    expect(cluster.pservers[0]!.killedBy).toBe('SIGKILL');
    expect(chaos.failures[0]).toMatchObject({ victim: 'pserver-0', killedAt: 1_900 });
  });
});

describe('chaosPlan', () => {
  it('grows the job at 20 % of the run, before the kills at 40 and 65 %', () => {
    expect(chaosPlan(['pserver', 'master'], true)).toEqual([
      { at: 0.2, action: 'grow' },
      { at: 0.4, action: 'pserver' },
      { at: 0.65, action: 'master' },
    ]);
    expect(chaosPlan(['pserver'], true).map((s) => s.action)).toEqual(['grow', 'pserver']);
    expect(chaosPlan(['pserver', 'master'], false)).toEqual([
      { at: 0.4, action: 'pserver' },
      { at: 0.65, action: 'master' },
    ]);
  });
});
