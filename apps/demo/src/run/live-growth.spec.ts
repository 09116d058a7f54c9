import { FakeProcess } from './fake-process';
import { LiveGrowth, type GrowthEvent, type GrowthHost } from './live-growth';
import { servingNow } from './serving-now';
import { TrainingProgress } from './training-progress';

/**
 * A job of fake pservers: `startSpare` adds one, `askShardCount` is written down; who serves is
 * read from their lines as the demo reads them (`servingNow`).
 */
class FakeJob implements GrowthHost {
  readonly pservers: { process: FakeProcess }[] = [];
  readonly calls: string[] = [];
  askFails: Error | undefined;

  constructor(running: number) {
    for (let k = 0; k < running; k++) this.add();
  }

  runningPservers(): number {
    return this.pservers.filter((p) => p.process.running).length;
  }

  startSpare(): Promise<{ name: string; pid: number }> {
    const { process } = this.add();
    this.calls.push(`start ${process.name}`);
    return Promise.resolve(process);
  }

  askShardCount(count: number): Promise<string> {
    this.calls.push(`ask ${count}`);
    return this.askFails ? Promise.reject(this.askFails) : Promise.resolve('master-0');
  }

  serving(): ReturnType<GrowthHost['serving']> {
    return servingNow(this.pservers);
  }

  pserverProcesses(): FakeProcess[] {
    return this.pservers.map((p) => p.process);
  }

  process(k: number): FakeProcess {
    return this.pservers[k]!.process;
  }

  private add(): { process: FakeProcess } {
    const k = this.pservers.length;
    const pserver = { process: new FakeProcess(`pserver-${k}`, 100 + k) };
    this.pservers.push(pserver);
    return pserver;
  }
}

const step = (t: number): string =>
  JSON.stringify({ event: 'step', pass: 0, loss: 1, samples: 10, started: t - 50, t });

const serve = (p: FakeProcess, at: number, index: number, epoch: number, count: number): void =>
  p.log(at, 'serving', { index, shardEpoch: epoch, shardCount: count });

/** Lets the growth's background work (the fake's resolved promises) run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('LiveGrowth', () => {
  it('starts a pserver, asks for one more shard, and times the hand-back, the restore and the resumption', async () => {
    // Two shards on pserver-0 and pserver-1, pserver-2 the spare.
    const job = new FakeJob(3);
    serve(job.process(0), 100, 0, 7, 2);
    serve(job.process(1), 100, 1, 9, 2);
    const progress = new TrainingProgress(['a', 'b'], 1, 1000);
    const events: GrowthEvent['kind'][] = [];
    let now = 1_000;
    const growth = new LiveGrowth(
      job,
      progress,
      (e) => events.push(e.kind),
      {
        from: 2,
        replicas: 0,
        audit: () => Promise.resolve({ acknowledged: 50, lost: 0, doubled: 0 }),
      },
      () => now,
    );

    growth.begin();
    await settle();
    // 3 shards and a spare: one more pserver, started before the ask.
    expect(job.calls).toEqual(['start pserver-3', 'ask 3']);
    expect(growth.growth).toMatchObject({
      from: 2,
      to: 3,
      started: [{ name: 'pserver-3', pid: 103 }],
      askedOf: 'master-0',
      askedAt: 1_000,
    });
    expect(events).toEqual(['growth asked']);

    // A step the old shards took before handing back says nothing of the new count.
    progress.onTrainerLine('a', step(1_100));
    job.process(0).log(1_200, 'handed the shard back', { index: 0, shardEpoch: 7 });
    job.process(1).log(1_300, 'handed the shard back', { index: 1, shardEpoch: 9 });
    job
      .process(0)
      .log(1_200, 'handed the shard back to the receivers of a live move', { pauseMs: 60 });
    job
      .process(1)
      .log(1_300, 'handed the shard back to the receivers of a live move', { pauseMs: 110 });
    now = 1_400;
    growth.tick();
    expect(growth.growth.handedBackAt).toBe(1_300);
    // The first refusal: 1,300 − 110 ms.
    expect(growth.growth.refusedAt).toBe(1_140);
    expect(growth.growth.servedAt).toBeUndefined();

    // Each index of 3 restores its share of the 2 old checkpoints, then serves.
    for (const [k, index, at, ms] of [
      [1, 2, 1_500, 30],
      [2, 0, 1_600, 45],
      [3, 1, 1_700, 20],
    ] as const) {
      job
        .process(k)
        .log(at - 10, 'restored the shard from the checkpoints of another shard count', { ms });
      serve(job.process(k), at, index, 50 + k, 3);
    }
    growth.tick();
    expect(growth.growth).toMatchObject({ servedAt: 1_700, restoreMs: 45, moved: 0 });
    expect(growth.growth.resumedAt).toBeUndefined();

    progress.onTrainerLine('a', step(1_800));
    growth.tick();
    expect(growth.growth.resumedAt).toBeUndefined(); // b has not stepped at 3 shards yet
    progress.onTrainerLine('b', step(1_950));
    growth.tick();
    expect(growth.growth.resumedAt).toBe(1_950);
    expect(growth.settled).toBe(false); // the audit reads back
    await growth.finish();
    expect(growth.growth.audit).toEqual({ acknowledged: 50, lost: 0, doubled: 0 });
    expect(growth.settled).toBe(true);
    expect(events).toEqual(['growth asked', 'growth served', 'growth resumed', 'growth audited']);
  });

  it('starts a pserver for each new shard copy, and one more as a spare', async () => {
    // 3 shards with a replica each and a spare: 7 pservers; 4 shards need 8 and a spare.
    const job = new FakeJob(7);
    const growth = new LiveGrowth(job, new TrainingProgress(['a'], 1, 1000), () => undefined, {
      from: 3,
      replicas: 1,
    });
    growth.begin();
    await settle();
    expect(job.calls).toEqual(['start pserver-7', 'start pserver-8', 'ask 4']);
  });

  it('throws what the ask failed with at the next tick', async () => {
    const job = new FakeJob(3);
    job.askFails = new Error('no master took the shard count 3 within 30 s: no leader');
    const growth = new LiveGrowth(job, new TrainingProgress(['a'], 1, 1000), () => undefined, {
      from: 2,
      replicas: 0,
    });
    growth.begin();
    await expect(growth.finish()).rejects.toThrow('no master took the shard count 3');
    expect(() => growth.tick()).toThrow('no master took the shard count 3');
    expect(growth.settled).toBe(false);
  });
});
