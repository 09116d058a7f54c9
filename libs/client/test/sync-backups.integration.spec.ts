import { startPserverProcess, stopAllProcesses, type PserverProcess } from '@pserver/testing';
import { connect, type PserverClient, type PushReport } from '../src';

// SYNC with backup trainers: 3 trainers, a step closes on the first 2 contributions, and the
// third's push for a closed step is answered DROPPED_LATE with the shard's version — never
// applied, never silently lost — after which its client goes on at the open step.

afterAll(() => stopAllProcesses());

describe('SYNC with K = 2 of N = 3 (backup trainers)', () => {
  let pserver: PserverProcess;
  const clients: PserverClient[] = [];

  beforeAll(async () => {
    pserver = await startPserverProcess(
      [
        ...['--index', '0', '--shards', '1', '--consistency', 'sync'],
        ...['--sync-trainers', '3', '--replicas-to-aggregate', '2'],
      ],
      { name: 'sync-backups' },
    );
    for (const trainerId of [1, 2, 3])
      clients.push(
        await connect({ pservers: [pserver.address], trainerId, initializer: trainerId === 1 }),
      );
    await clients[0]!.initParams(
      { w: Float32Array.of(10, 20, 30, 40) },
      { sgd: {}, learningRate: { base: 1 } },
    );
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await pserver.process.stop();
  });

  /** One step of trainer t pushing `g` everywhere; its step number and the push's report. */
  const push = (t: number, g: number): Promise<[number, PushReport]> =>
    clients[t - 1]!.step(async (ctx) => [
      ctx.step,
      await ctx.sendGrads({ w: new Float32Array(4).fill(g) }),
    ]);
  const outcomes = ([, report]: [number, PushReport]): [unknown, number][] =>
    report.shards.map((s) => [s.outcome, s.version]);

  it('closes each step on the first two, answers the third DROPPED_LATE, and the late one catches up', async () => {
    // Step 1: trainers 1 and 2 close it with the mean of 1 and 3; trainer 3 comes late.
    expect(outcomes(await push(1, 1))).toEqual([['PUSH_OUTCOME_ACCUMULATED', 0]]);
    expect(outcomes(await push(2, 3))).toEqual([['PUSH_OUTCOME_ACCUMULATED', 1]]);
    const late = await push(3, 1000);
    expect(late[0]).toBe(1);
    expect(outcomes(late)).toEqual([['PUSH_OUTCOME_DROPPED_LATE', 1]]);
    expect([...(await clients[0]!.getParams(['w'], Float32Array)).w!]).toEqual([8, 18, 28, 38]);

    // Step 2: trainer 3 goes on at the open step and counts; now trainer 2 is the late one.
    const onTime = await push(3, 5);
    expect(onTime[0]).toBe(2);
    expect(outcomes(onTime)).toEqual([['PUSH_OUTCOME_ACCUMULATED', 1]]);
    expect(outcomes(await push(1, 1))).toEqual([['PUSH_OUTCOME_ACCUMULATED', 2]]);
    expect(outcomes(await push(2, 1000))).toEqual([['PUSH_OUTCOME_DROPPED_LATE', 2]]);
    expect([...(await clients[1]!.getParams(['w'], Float32Array)).w!]).toEqual([5, 15, 25, 35]);
  });
});
