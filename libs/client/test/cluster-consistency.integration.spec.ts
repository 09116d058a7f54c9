import path from 'node:path';
import { placeTensor } from '@pserver/proto';
import {
  bundleScript,
  LocalCluster,
  MasterDriver,
  metricsPage,
  parseJsonLine,
  sleep,
  spawnNode,
  stopAllProcesses,
  waitFor,
  type ManagedProcess,
  type PserverProcess,
} from '@pserver/testing';
import { connect } from '../src';

// SYNC and SSP in a cluster job: the roster is the trainers with a live session. Real etcd, a
// master started with --consistency, two pservers, trainers as processes (fixtures/
// roster-trainer.ts) training the one-hot ledger. Three trainers step together; one is killed
// (SIGKILL) in the middle of the run: the others go on once its session ends (no step waits
// for it forever); then a fourth trainer joins and counts from the step the job is at. At the end
// every acknowledged contribution is in the ledger exactly once: in SSP each step of each trainer
// raised its coordinate by 1; in SYNC by 1/n, n the contributions its step closed with (3, or 2
// while the victim was gone and before the joiner came, or 1 at the start before the others registered).

const sessionTtlSeconds = 2;
const ordinals = 4;
const capacity = 4_000;
const blockSize = 64;
/** Generous: catches a step that waits for a dead trainer forever, not a slow machine. */
const resumeBoundMs = sessionTtlSeconds * 1_000 + 20_000;

interface StepLine {
  ordinal: number;
  step: number;
  trainerId: number;
  atMs: number;
  shards: { shard: number; outcome: string; version: number }[];
}

/** The values an acknowledged step's coordinate may have. */
const modes: [string, { flag: string; applied: number[] }][] = [
  // SYNC: its trainer's −1 in the mean over the step's n contributions.
  ['SYNC', { flag: 'sync', applied: [1, 2, 3].map((n) => Math.fround(1 / n)) }],
  ['SSP (s = 1)', { flag: 'ssp:1', applied: [1] }],
];

/** Trainer processes of fixtures/roster-trainer.ts, by ordinal, and the steps they printed. */
function rosterTrainers(masters: string, tag: string) {
  const script = bundleScript(path.join(__dirname, 'fixtures', 'roster-trainer.ts'));
  const trainers: ManagedProcess[] = [];
  const start = (ordinal: number): ManagedProcess =>
    (trainers[ordinal] = spawnNode(
      script,
      [masters, String(ordinal), String(ordinals), String(capacity)],
      { name: `roster-${tag}-${ordinal}`, stdinPipe: true },
    ));
  const stepsOf = (ordinal: number): StepLine[] =>
    (trainers[ordinal]?.lines ?? [])
      .map(parseJsonLine)
      .filter((line) => line?.['event'] === 'step') as unknown as StepLine[];
  const stepped = async (ordinal: number, count: number): Promise<void> => {
    await waitFor(() => stepsOf(ordinal).length >= count, {
      timeoutMs: resumeBoundMs,
      description: `trainer ${ordinal} at ${count} steps`,
    });
  };
  return { trainers, start, stepsOf, stepped };
}

/** Which shard holds each coordinate of the ledger. */
function ledgerShards(): Map<number, number> {
  const shardOf = new Map<number, number>();
  for (const block of placeTensor('ledger', ordinals * capacity, blockSize, 2))
    for (let at = block.start; at < block.end; at++) shardOf.set(at, block.shard);
  return shardOf;
}

afterAll(() => stopAllProcesses());

describe.each(modes)('%s in a cluster job whose trainers come and go', (_, mode) => {
  it('goes on without a killed trainer, counts one that joins, and applies every acknowledged step once', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      leaseTtlSeconds: 2,
      sessionTtlSeconds,
      blockSize,
      extraMasterArgs: ['--consistency', mode.flag],
    });
    const masters = cluster.masters.map((m) => m.address).join(',');
    const { trainers, start, stepsOf, stepped } = rosterTrainers(masters, mode.flag);
    // An evaluator, registered all along: no step waits for it, and it may not push.
    const observer = await connect({
      master: masters.split(','),
      name: 'evaluator',
      observer: true,
    });
    try {
      for (const ordinal of [0, 1, 2]) start(ordinal);
      for (const ordinal of [0, 1, 2]) await stepped(ordinal, 10);

      // The victim dies between or during steps; its session ends after the TTL.
      await trainers[2]!.kill();
      const afterKill = [stepsOf(0).length, stepsOf(1).length];
      await stepped(0, afterKill[0]! + 10);
      await stepped(1, afterKill[1]! + 10);

      // A trainer that joins is waited for from the step the job is at.
      start(3);
      await stepped(3, 10);
      const joinedAt = stepsOf(3)[0]!.step;
      const afterJoin = [stepsOf(0).length, stepsOf(1).length];
      await stepped(0, afterJoin[0]! + 5);
      await stepped(1, afterJoin[1]! + 5);

      await expect(
        observer.step((ctx) => ctx.sendGrads({ ledger: new Float32Array(ordinals * capacity) })),
      ).rejects.toMatchObject({ code: 'PSERVER_NOT_IN_ROSTER' });
      for (const ordinal of [0, 1, 3]) trainers[ordinal]!.signal('SIGUSR2');
      for (const ordinal of [0, 1, 3])
        expect({ ordinal, exit: await trainers[ordinal]!.exited }).toEqual({
          ordinal,
          exit: { code: 0, signal: null },
        });

      // Each trainer's steps are consecutive, the joiner's from where the job was.
      for (const ordinal of [0, 1, 2, 3]) {
        const numbers = stepsOf(ordinal).map((line) => line.step);
        expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
      }
      expect(joinedAt).toBeGreaterThan(stepsOf(2).at(-1)!.step);

      const shardOf = ledgerShards();
      const coordinate = (ordinal: number, line: StepLine): number =>
        ordinal * capacity + line.step - 1;
      const outcomeOf = (ordinal: number, line: StepLine): string | undefined =>
        line.shards.find((s) => s.shard === shardOf.get(coordinate(ordinal, line)))?.outcome;

      // SYNC: a step the last trainers contributed to before they left closes once they left.
      const reader = await connect({ master: cluster.masters.map((m) => m.address) });
      let ledger: Float32Array | undefined;
      await waitFor(
        async () => {
          ({ ledger } = await reader.getParams(['ledger'], Float32Array));
          return [0, 1, 3].every((o) =>
            stepsOf(o).every(
              (line) =>
                outcomeOf(o, line) === 'PUSH_OUTCOME_DROPPED_LATE' ||
                ledger![coordinate(o, line)] !== 0,
            ),
          );
        },
        { timeoutMs: 10_000, description: 'every acknowledged step in the ledger' },
      ).finally(() => reader.close());

      const wrong: string[] = [];
      const acknowledged = new Set<number>();
      for (const ordinal of [0, 1, 2, 3])
        for (const line of stepsOf(ordinal)) {
          const at = coordinate(ordinal, line);
          acknowledged.add(at);
          const outcome = outcomeOf(ordinal, line);
          if (outcome === 'PUSH_OUTCOME_DROPPED_LATE') {
            if (ledger![at] !== 0)
              wrong.push(`(${ordinal}, ${line.step}) dropped late but is ${ledger![at]}`);
          } else if (!mode.applied.includes(ledger![at]!))
            wrong.push(`(${ordinal}, ${line.step}) ${outcome} is ${ledger![at]}`);
        }
      if (mode.flag === 'sync') {
        // Once the joiner came, a step the three trainers all contributed to on a shard closed
        // there with the three of them. (A shard that had not seen the joiner yet may have closed
        // its first step without it: that push came back dropped late.)
        const accumulated = (ordinal: number, step: number, shard: number): boolean =>
          stepsOf(ordinal).some(
            (line) =>
              line.step === step &&
              line.shards.some(
                (s) => s.shard === shard && s.outcome === 'PUSH_OUTCOME_ACCUMULATED',
              ),
          );
        for (const { step } of stepsOf(3))
          for (const ordinal of [0, 1, 3]) {
            const at = ordinal * capacity + step - 1;
            const shard = shardOf.get(at)!;
            if (![0, 1, 3].every((o) => accumulated(o, step, shard))) continue;
            if (ledger![at] !== Math.fround(1 / 3))
              wrong.push(`(${ordinal}, ${step}) is ${ledger![at]} in a step of three trainers`);
          }
      }
      // Nothing else moved but the victim's last step, which it may have pushed unacknowledged.
      const victimNext = 2 * capacity + (stepsOf(2).at(-1)?.step ?? 0);
      for (const [at, value] of ledger!.entries())
        if (value !== 0 && !acknowledged.has(at) && at !== victimNext)
          wrong.push(`coordinate ${at} is ${value}, no acknowledged step owns it`);
      expect(wrong).toEqual([]);
      console.log(
        `${mode.flag}: ${[0, 1, 2, 3].map((o) => `trainer ${o}: ${stepsOf(o).length} steps`).join(', ')}; the joiner began at step ${joinedAt}`,
      );
    } finally {
      await observer.close();
      await Promise.all(trainers.map((t) => t?.kill()));
      await cluster.stop();
    }
  }, 300_000);
});

// With replicas, SYNC loses no closed step (a step's reads wait until the replicas hold it), and
// under the default failover policy ("rerun") not the step open on the killed primary either: the
// promoted replica asks each trainer for its push of that step again (PSERVER_RESEND_STEP) and the
// step closes with every contribution. SSP loses nothing acknowledged. Under "continue", the step
// open at the kill may close without the contributions the killed primary alone held.
const replicated: [
  string,
  { flags: string[]; applied: number[]; openStepsLost: number; resends?: true },
][] = [
  [
    'SYNC',
    {
      flags: ['sync'],
      applied: [1, 2, 3].map((n) => Math.fround(1 / n)),
      openStepsLost: 0,
      resends: true,
    },
  ],
  [
    'SYNC, --sync-failover continue',
    {
      flags: ['sync', '--sync-failover', 'continue'],
      applied: [1, 2, 3].map((n) => Math.fround(1 / n)),
      openStepsLost: 1,
    },
  ],
  ['SSP (s = 1)', { flags: ['ssp:1'], applied: [1], openStepsLost: 0 }],
];

describe.each(replicated)('%s with replicated shards', (_, mode) => {
  it('a primary killed mid-run loses no closed step', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      spares: 2,
      replicas: 1,
      leaseTtlSeconds: 2,
      sessionTtlSeconds,
      blockSize,
      extraMasterArgs: ['--consistency', ...mode.flags],
      // Primaries send a digest of the shard every second; replicas compare theirs.
      extraPserverArgs: ['--replica-digest-interval-s', '1', '--metrics-port', '0'],
    });
    const masters = cluster.masters.map((m) => m.address).join(',');
    const tag = mode.flags.join('-').replace(/[^\w:-]/g, '');
    const { trainers, start, stepsOf, stepped } = rosterTrainers(masters, `${tag}-replicas`);
    const driver = new MasterDriver(cluster.masters[0]!.address);
    const reader = await connect({ master: masters.split(','), observer: true });
    try {
      for (const ordinal of [0, 1, 2]) start(ordinal);
      for (const ordinal of [0, 1, 2]) await stepped(ordinal, 10);
      // Replicas copy a shard once the job is initialized.
      await waitFor(
        async () =>
          (await driver.clusterView()).shards.every((s) => s.replicas.some((r) => r.inSync)),
        { timeoutMs: 60_000, description: 'a replica in sync for every shard' },
      );
      // Trainer 2 held (well within its session TTL) keeps the others' contributions waiting in
      // the open step: the kill takes them with the primary. In SYNC they are there once both
      // others' pushes are parked on it; a fixed wait missed them on a loaded machine (CI), and
      // a hold that does not see them in time lets trainer 2 go on and holds it again.
      const victim = cluster.pserverServing(0);
      for (let hold = 1; ; hold++) {
        trainers[2]!.signal('SIGSTOP');
        if (!mode.flags.includes('sync')) {
          await sleep(600);
          break;
        }
        if (await parkedCallsReach(victim, 2, 1_200)) break;
        trainers[2]!.signal('SIGCONT');
        if (hold === 5) throw new Error('the open step never held both other contributions');
        await stepped(2, stepsOf(2).length + 1);
      }
      await victim.process.kill();
      trainers[2]!.signal('SIGCONT');
      const atKill = [0, 1, 2].map((o) => stepsOf(o).length);
      for (const ordinal of [0, 1, 2]) await stepped(ordinal, atKill[ordinal]! + 10);
      for (const ordinal of [0, 1, 2]) trainers[ordinal]!.signal('SIGUSR2');
      for (const ordinal of [0, 1, 2])
        expect({ ordinal, exit: await trainers[ordinal]!.exited }).toEqual({
          ordinal,
          exit: { code: 0, signal: null },
        });

      const shardOf = ledgerShards();
      const acknowledged = [0, 1, 2].flatMap((o) =>
        stepsOf(o).map((line) => ({ at: o * capacity + line.step - 1, line })),
      );
      // Holes: acknowledged contributions not in the ledger. In SYNC only the victim's step open
      // at the kill may have them (its contributions were on the primary alone); every closed one
      // was on the replica before any trainer read past it.
      const holesOf = (ledger: Float32Array) => acknowledged.filter(({ at }) => ledger[at] === 0);
      let ledger: Float32Array | undefined;
      await waitFor(
        async () => {
          ({ ledger } = await reader.getParams(['ledger'], Float32Array));
          const holes = holesOf(ledger!);
          return new Set(holes.map(({ line }) => line.step)).size <= mode.openStepsLost &&
            holes.every(({ at }) => shardOf.get(at) === 0)
            ? true
            : undefined;
        },
        { timeoutMs: 10_000, description: 'no holes but at the step open at the kill' },
      ).catch((err: unknown) => {
        throw new Error(
          `${(err as Error).message}: holes ${JSON.stringify(holesOf(ledger!).map(({ at }) => at))}`,
        );
      });
      const wrong = acknowledged
        .filter(({ at }) => ledger![at] !== 0)
        .filter(({ at }) => !mode.applied.includes(ledger![at]!))
        .map(({ at }) => `coordinate ${at} is ${ledger![at]}`);
      expect(wrong).toEqual([]);
      // Replicas applied what their primaries did, marks included: every digest compared equal.
      const compared = cluster.pservers.flatMap((p) =>
        p.process
          .jsonLines()
          .filter((e) => e.msg === "the replica's copy differs from the primary's shard"),
      );
      expect(compared).toEqual([]);
      // Under "rerun" the promoted replica asked for the open step's pushes again.
      const resent = [0, 1, 2].flatMap((o) =>
        trainers[o]!.jsonLines().filter(
          (e) => e.msg === 'a shard failed over without the last step: sending it again',
        ),
      );
      if (mode.resends) expect(resent.length).toBeGreaterThan(0);
      console.log(
        `${mode.flags.join(' ')}, replicated: ${acknowledged.length} acknowledged steps, the primary of shard 0 killed at step ${stepsOf(0)[atKill[0]! - 1]!.step}; contributions lost with it: ${holesOf(ledger!).length}; pushes sent again: ${resent.length}`,
      );
    } finally {
      driver.close();
      await reader.close();
      await Promise.all(trainers.map((t) => t?.kill()));
      await cluster.stop();
    }
  }, 300_000);
});

/** Whether `pserver`'s parked calls (SYNC pushes and reads waiting for the clock) reach `count`. */
async function parkedCallsReach(
  pserver: PserverProcess,
  count: number,
  timeoutMs: number,
): Promise<boolean> {
  const parked = async (): Promise<number> =>
    Number(/^pserver_parked_calls (\d+)/m.exec(await metricsPage(pserver))?.[1] ?? 0);
  return waitFor(async () => (await parked()) >= count || undefined, {
    timeoutMs,
    intervalMs: 20,
    description: `${count} parked calls`,
  }).then(
    () => true,
    () => false,
  );
}
