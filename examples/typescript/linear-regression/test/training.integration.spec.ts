import path from 'node:path';
import { connect } from '@pserver/client';
import {
  LocalCluster,
  spawnNode,
  stopAllProcesses,
  waitFor,
  workspaceRoot,
  type ManagedProcess,
} from '@pserver/testing';

// Three trainer processes train to the known weights while the cluster fails under them: the
// pserver serving a shard is killed (its spare restores the last checkpoint) and then the leading
// master is killed. No trainer is restarted by hand.
const trainerBundle = path.join(
  workspaceRoot(),
  'dist',
  'examples',
  'linear-regression',
  'main.js',
);
const tolerance = 1e-3;

afterAll(() => stopAllProcesses());

interface Progress {
  trainer: string;
  event: string;
  step?: number;
  weights?: number[];
  bias?: number[];
  trueWeights?: number[];
  trueBias?: number;
}

const events = (trainer: ManagedProcess): Progress[] =>
  trainer.jsonLines() as unknown as Progress[];
const lastStep = (trainer: ManagedProcess): number =>
  Math.max(0, ...events(trainer).map((e) => e.step ?? 0));

describe('three trainers, a pserver and the leading master killed mid-run', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 2,
      spares: 1,
      masters: 2,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 3,
      blockSize: 4,
      extraPserverArgs: ['--checkpoint-interval-s', '1'],
    });
  });

  afterAll(() => cluster?.stop());

  it('every trainer finishes and the parameters reach the true weights', async () => {
    const steps = 1500;
    const trainers = [1, 2, 3].map((i) =>
      spawnNode(
        trainerBundle,
        [
          '--master',
          cluster.masterAddresses.join(','),
          '--name',
          `trainer-${i}`,
          '--seed',
          String(i),
          '--steps',
          String(steps),
          '--report-every',
          '10',
          '--json',
        ],
        { name: `trainer-${i}` },
      ),
    );
    const progressed = (atLeast: number): Promise<void> =>
      waitFor(() => trainers.every((t) => lastStep(t) >= atLeast) || undefined, {
        timeoutMs: 60_000,
        description: `every trainer past step ${atLeast}`,
      }).then(() => undefined);

    await progressed(50);
    const served = cluster.serving();
    const victim = served.get(0)!;
    await victim.pserver.process.kill();
    await waitFor(
      () => {
        const now = cluster.serving().get(0);
        return now && now.epoch > victim.epoch ? now : undefined;
      },
      { timeoutMs: 30_000, description: 'the spare serves shard 0' },
    );

    const before = Math.max(...trainers.map(lastStep));
    await progressed(before + 50);
    const leader = await waitFor(
      () =>
        cluster.masters.find(
          (m) => m.process.jsonLines().some((e) => e.msg === 'leading') && m.process.running,
        ),
      { timeoutMs: 10_000, description: 'the leading master' },
    );
    await leader.process.kill();
    const afterMaster = Math.max(...trainers.map(lastStep));
    expect(afterMaster).toBeLessThan(steps);

    const exits = await Promise.all(trainers.map((t) => t.exited));
    for (const [i, exit] of exits.entries()) {
      if (exit.code !== 0) throw trainers[i]!.failure(`exited with ${JSON.stringify(exit)}`);
    }
    for (const trainer of trainers) {
      const done = events(trainer).find((e) => e.event === 'done')!;
      expect(done.weights!.every((w, j) => Math.abs(w - done.trueWeights![j]!) < tolerance)).toBe(
        true,
      );
    }

    // What the pservers hold now, read by a fresh client.
    const reader = await connect({ master: cluster.masterAddresses });
    try {
      // It never initialized: getParams lists the model from the pservers first.
      const { w, b } = await reader.getParams(['w', 'b'], Float64Array);
      const truth = events(trainers[0]!).find((e) => e.event === 'done')!;
      w.forEach((value, j) =>
        expect(Math.abs(value - truth.trueWeights![j]!)).toBeLessThan(tolerance),
      );
      expect(Math.abs(b[0]! - truth.trueBias!)).toBeLessThan(tolerance);
    } finally {
      await reader.close();
    }
  });
});
