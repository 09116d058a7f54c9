import { Chaos, type ChaosCluster, type ChaosEvent, type ChaosProcess } from './chaos';
import { TrainingProgress } from './training-progress';

/** A process that is killed by a flag and whose latest lines the test writes. */
class FakeProcess implements ChaosProcess {
  killedBy: NodeJS.Signals | undefined;
  private readonly logs = new Map<string, Record<string, unknown>>();

  constructor(
    readonly name: string,
    readonly pid: number,
  ) {}

  signal(signal: NodeJS.Signals): void {
    this.killedBy = signal;
  }

  lastLog(msg: string): Record<string, unknown> | undefined {
    return this.logs.get(msg);
  }

  log(at: number, msg: string, fields: Record<string, unknown> = {}): void {
    this.logs.set(msg, { msg, time: new Date(at).toISOString(), ...fields });
  }
}

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

describe('Chaos', () => {
  it('counts the time lost from the kill until every trainer completed a step after the takeover', () => {
    const cluster = new FakeCluster();
    const progress = new TrainingProgress(['a', 'b'], 1, 1000);
    const events: ChaosEvent['kind'][] = [];
    const chaos = new Chaos(cluster, progress, 0, (e) => events.push(e.kind));

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

  it('kills only what its plan names', () => {
    const cluster = new FakeCluster();
    const progress = new TrainingProgress(['a'], 1, 1000);
    const chaos = new Chaos(cluster, progress, 0, () => undefined, ['pserver']);
    progress.onTrainerLine('a', step(500, 0, 900));
    chaos.tick(1_000);
    progress.onTrainerLine('a', step(400, 1_000, 1_900));
    chaos.tick(2_000);
    expect(cluster.pservers[0]!.killedBy).toBe('SIGKILL');
    expect(cluster.masters[0]!.killedBy).toBeUndefined();
    expect(chaos.failures.map((f) => f.target)).toEqual(['pserver']);
  });
});
