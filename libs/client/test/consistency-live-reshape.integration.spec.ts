import path from 'node:path';
import { placeTensor } from '@pserver/proto';
import {
  bundleScript,
  LocalCluster,
  MasterDriver,
  parseJsonLine,
  spawnNode,
  stopAllProcesses,
  waitFor,
  type ManagedProcess,
} from '@pserver/testing';
import { connect } from '../src';

// SYNC and SSP through a change of the running job's shard count, 2 → 3: three trainers
// (fixtures/roster-trainer.ts: the one-hot ledger, step s of trainer o pushes −1 at coordinate
// o × capacity + s − 1) step together while every primary hands its shard back with a final
// checkpoint and the three pservers restore their shares of 3. Steps open at the hand-back are
// run again or resent under the new view; at the end every acknowledged contribution is in the
// ledger exactly once — SYNC: 1/n of the step's n contributions; SSP: 1 — and nothing else is.
const ordinals = 3;
const capacity = 4_000;
const blockSize = 64;

interface StepLine {
  step: number;
  shards: { shard: number; outcome: string }[];
}

const modes: [string, { flag: string; applied: number[] }][] = [
  ['SYNC', { flag: 'sync', applied: [1, 2, 3].map((n) => Math.fround(1 / n)) }],
  ['SSP (s = 1)', { flag: 'ssp:1', applied: [1] }],
];

afterAll(() => stopAllProcesses());

describe.each(modes)('%s through a change of the running job’s shard count', (_, mode) => {
  it('applies every acknowledged contribution exactly once, before and after 2 → 3', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      spares: 1,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 3,
      blockSize,
      extraMasterArgs: ['--consistency', mode.flag],
    });
    const masters = cluster.masters.map((m) => m.address).join(',');
    const script = bundleScript(path.join(__dirname, 'fixtures', 'roster-trainer.ts'));
    const trainers: ManagedProcess[] = [];
    const stepsOf = (o: number): StepLine[] =>
      trainers[o]!.lines.map(parseJsonLine).filter(
        (line) => line?.['event'] === 'step',
      ) as unknown as StepLine[];
    const stepped = (o: number, count: number): Promise<unknown> =>
      waitFor(() => stepsOf(o).length >= count, {
        timeoutMs: 60_000,
        description: `trainer ${o} at ${count} steps`,
      });
    const driver = new MasterDriver(cluster.masters[0]!.address);
    try {
      for (let o = 0; o < ordinals; o++)
        trainers.push(
          spawnNode(script, [masters, String(o), String(ordinals), String(capacity)], {
            name: `reshape-${mode.flag}-${o}`,
            stdinPipe: true,
          }),
        );
      for (let o = 0; o < ordinals; o++) await stepped(o, 10);
      await driver.setDesiredShards(3);
      await waitFor(
        async () => {
          const status = await driver.status();
          return !status.reshape &&
            status.view?.shards.length === 3 &&
            status.view.shards.every((s) => s.serving)
            ? true
            : undefined;
        },
        { timeoutMs: 60_000, description: 'the job serving at 3 shards' },
      );
      const atChange = [0, 1, 2].map((o) => stepsOf(o).length);
      for (let o = 0; o < ordinals; o++) await stepped(o, atChange[o]! + 10);
      for (const trainer of trainers) trainer.signal('SIGUSR2');
      for (const [o, trainer] of trainers.entries())
        expect({ o, exit: await trainer.exited }).toEqual({ o, exit: { code: 0, signal: null } });

      // The shard a step's coordinate lived on, at the count the step was acknowledged under.
      const shardAt = (at: number, count: number): number =>
        placeTensor('ledger', ordinals * capacity, blockSize, count).find(
          (b) => at >= b.start && at < b.end,
        )!.shard;
      const reader = await connect({ master: masters.split(','), observer: true });
      let ledger: Float32Array | undefined;
      const wrong = (): string[] => {
        const found: string[] = [];
        const acknowledged = new Set<number>();
        for (let o = 0; o < ordinals; o++)
          for (const line of stepsOf(o)) {
            const at = o * capacity + line.step - 1;
            acknowledged.add(at);
            const outcome = line.shards.find(
              (s) => s.shard === shardAt(at, line.shards.length),
            )?.outcome;
            const value = ledger![at]!;
            if (outcome === 'PUSH_OUTCOME_DROPPED_LATE') {
              if (value !== 0) found.push(`(${o}, ${line.step}) dropped late but is ${value}`);
            } else if (!mode.applied.includes(value))
              found.push(
                `(${o}, ${line.step}) ${outcome} under ${line.shards.length} shards is ${value}`,
              );
          }
        for (const [at, value] of ledger!.entries())
          if (value !== 0 && !acknowledged.has(at))
            found.push(`coordinate ${at} is ${value}, no acknowledged step owns it`);
        return found;
      };
      try {
        // SYNC: the last step the trainers contributed to closes once they left.
        await waitFor(
          async () => {
            ({ ledger } = await reader.getParams(['ledger'], Float32Array));
            return wrong().length === 0 ? true : undefined;
          },
          { timeoutMs: 10_000, description: 'every acknowledged step in the ledger once' },
        ).catch(() => undefined);
      } finally {
        await reader.close();
      }
      expect(wrong()).toEqual([]);
      console.log(
        `${mode.flag} through 2 → 3: ${[0, 1, 2].map((o) => `trainer ${o}: ${stepsOf(o).length} steps (${atChange[o]} before)`).join(', ')}`,
      );
    } finally {
      driver.close();
      await Promise.all(trainers.map((t) => t.kill()));
      await cluster.stop();
    }
  }, 180_000);
});
