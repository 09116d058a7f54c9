import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { metaFromJson, readCheckpointChain } from '@pserver/checkpoint';
import { parseBlockName } from '@pserver/proto';
import {
  PserverDriver,
  spawnProcess,
  startPserverProcess,
  stopAllProcesses,
  waitFor,
  workspaceRoot,
  type ManagedProcess,
  type PserverProcess,
  type TrainerProgram,
} from '@pserver/testing';
import { trainerProgram, type Language, type TrainerSources } from './trainer-programs';

// Synchronous steps, bit-exact across languages (proto/testdata/conformance/sync_steps.json):
// trainers in TypeScript, Python and Go train one model together on standalone SYNC pservers,
// and the checkpoint taken after their last step holds, byte for byte, the parameters and
// optimizer state of the single-process numpy reference (proto/testdata/sync_steps_reference.py).
// The trainer whose data runs out early keeps every later step moving with zero-sample pushes.

const testdata = path.join(workspaceRoot(), 'proto', 'testdata');
const scenarioFile = path.join(testdata, 'conformance', 'sync_steps.json');

interface Scenario {
  shardCounts: number[];
  trainers: { id: number; language: Language }[];
}
const scenario = JSON.parse(fs.readFileSync(scenarioFile, 'utf8')) as Scenario;

const syncTrainers: TrainerSources = {
  typescript: 'sync-trainer.ts',
  python: 'sync_trainer.py',
  go: 'synctrainer',
};

/** What a tensor ends as: its values and optimizer state, whole (blocks put back together). */
interface FinalTensor {
  values: string;
  updates: number;
  slots: Record<string, string>;
  scalars: Record<string, number>;
}

function python(): string {
  return execFileSync('sh', ['-c', 'command -pv python3'], { encoding: 'utf8' }).trim();
}

/** The reference's final state, computed now from the scenario. */
function reference(): Record<string, FinalTensor> {
  const script = path.join(testdata, 'sync_steps_reference.py');
  return JSON.parse(execFileSync(python(), [script, scenarioFile], { encoding: 'utf8' })) as Record<
    string,
    FinalTensor
  >;
}

/** The tensors of each shard's latest checkpoint, blocks in order, as the reference prints them. */
async function checkpointed(pservers: PserverProcess[]): Promise<Record<string, FinalTensor>> {
  const blocks = new Map<string, { block: number; values: Buffer; slots: Map<string, Buffer> }[]>();
  const states = new Map<string, Pick<FinalTensor, 'updates' | 'scalars'>[]>();
  for (const [index, pserver] of pservers.entries()) {
    const manifest = path.join(pserver.checkpointDir, `shard-${index}`, 'manifest.json');
    const { checkpoints } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as {
      checkpoints: unknown[];
    };
    await readCheckpointChain(pserver.checkpointDir, metaFromJson(checkpoints[0]), {
      tensor: ({ tensor, state }) => {
        const { tensor: name, block } = parseBlockName(tensor!.name);
        const slots = new Map(state!.slots.map((s) => [s.name, Buffer.from(s.content)]));
        blocks.set(name, [
          ...(blocks.get(name) ?? []),
          { block: block ?? 0, values: Buffer.from(tensor!.content), slots },
        ]);
        states.set(name, [
          ...(states.get(name) ?? []),
          { updates: Number(state!.updates), scalars: { ...state!.scalars } },
        ]);
      },
    });
  }
  return Object.fromEntries(
    [...blocks].map(([name, parts]) => {
      parts.sort((a, b) => a.block - b.block);
      const whole = (of: (part: (typeof parts)[number]) => Buffer): string =>
        Buffer.concat(parts.map(of)).toString('base64');
      // Every block of a tensor steps together: their states must agree to be one tensor's.
      const [first, ...rest] = states.get(name)!;
      for (const other of rest) expect(other).toEqual(first);
      return [
        name,
        {
          values: whole((p) => p.values),
          updates: first!.updates,
          slots: Object.fromEntries(
            [...parts[0]!.slots.keys()].map((slot) => [slot, whole((p) => p.slots.get(slot)!)]),
          ),
          scalars: first!.scalars,
        },
      ];
    }),
  );
}

/** Starts a trainer; `report` resolves with the line it printed at its end. */
function trainer(
  program: TrainerProgram,
  id: number,
  addresses: string,
  env: Record<string, string> = {},
): { process: ManagedProcess; report: Promise<unknown> } {
  const child = spawnProcess(
    program.command,
    [...program.args, scenarioFile, String(id), addresses],
    { name: `sync-${program.language}-${id}`, env: { ...program.env, ...env } },
  );
  const report = child.exited.then((status) => {
    if (status.code !== 0) throw child.failure(`exited ${String(status.code ?? status.signal)}`);
    return JSON.parse(child.lines.find((line) => line.startsWith('{"trainer"'))!) as unknown;
  });
  return { process: child, report };
}

/** Every push of a step's gradients waited in the open step until the step closed. */
function expectAccumulatedOnly(reports: unknown[]): void {
  for (const report of reports)
    expect(Object.keys((report as { outcomes: object }).outcomes)).toEqual([
      'PUSH_OUTCOME_ACCUMULATED',
    ]);
}

/** Checkpoints every shard: what the reference is compared with. */
async function checkpointAll(pservers: PserverProcess[]): Promise<void> {
  for (const pserver of pservers) {
    const driver = new PserverDriver(pserver.address);
    await driver.saveCheckpoint().finally(() => driver.close());
  }
}

afterAll(() => stopAllProcesses());

describe('SYNC: three trainers in three languages', () => {
  let programs: Map<number, TrainerProgram>;
  let expected: Record<string, FinalTensor>;

  beforeAll(() => {
    programs = new Map(
      scenario.trainers.map(({ id, language }) => [id, trainerProgram(language, syncTrainers)]),
    );
    expected = reference();
  });

  it.each(scenario.shardCounts)(
    'over %i shard(s) end with parameters and optimizer state byte-identical to the reference',
    async (shards) => {
      const pservers = await Promise.all(
        Array.from({ length: shards }, (_, i) =>
          startPserverProcess(
            [
              ...['--index', String(i), '--shards', String(shards)],
              ...['--consistency', 'sync', '--sync-trainers', String(scenario.trainers.length)],
            ],
            { name: `sync-${shards}-${i}` },
          ),
        ),
      );
      const addresses = pservers.map((p) => p.address).join(',');
      const reports = await Promise.all(
        scenario.trainers.map(({ id }) => trainer(programs.get(id)!, id, addresses).report),
      );
      expectAccumulatedOnly(reports);
      await checkpointAll(pservers);
      expect(await checkpointed(pservers)).toEqual(expected);
      await Promise.all(pservers.map((p) => p.process.stop()));
    },
    120_000,
  );

  // The default failover policy ("rerun"), exactly: the TypeScript trainer stops before step 6,
  // so the Python and Go trainers' pushes of step 6 wait in the open step; shard 1 is
  // checkpointed (every step closed there so far), killed with those pushes in memory only, and
  // restarted from its checkpoint. Their reads of step 7 are then answered PSERVER_RESEND_STEP,
  // their clients send the kept pushes of step 6 again, and the job ends byte-identical to the
  // reference: no contribution lost, none counted twice.
  it('over 3 shards, one killed with contributions in its open step and restarted, still ends byte-identical', async () => {
    const shards = 3;
    const victim = 1;
    const start = (i: number, port = 0, checkpointDir?: string): Promise<PserverProcess> =>
      startPserverProcess(
        [
          ...['--index', String(i), '--shards', String(shards), '--port', String(port)],
          ...['--consistency', 'sync', '--sync-trainers', String(scenario.trainers.length)],
        ],
        { name: `sync-failover-${i}`, checkpointDir },
      );
    const pservers = await Promise.all(Array.from({ length: shards }, (_, i) => start(i)));
    const addresses = pservers.map((p) => p.address).join(',');
    const pauseBefore = 6;
    const paused = scenario.trainers.find((t) => t.language === 'typescript')!.id;
    const trainers = scenario.trainers.map(({ id }) =>
      trainer(
        programs.get(id)!,
        id,
        addresses,
        id === paused ? { SYNC_TRAINER_PAUSE_BEFORE_STEP: String(pauseBefore) } : {},
      ),
    );
    const held = trainers[scenario.trainers.findIndex((t) => t.id === paused)]!.process;
    await held.waitForLine((line) => line === `{"pausing":${pauseBefore}}`, { timeoutMs: 60_000 });
    // The others push step 6 everywhere and wait to read step 7: wait until shard 1 holds their
    // contributions (a trainer's last step there counts the open step's).
    const status = new PserverDriver(pservers[victim]!.address);
    const others = scenario.trainers.filter((t) => t.id !== paused).map((t) => t.id);
    await waitFor(
      async () => {
        const steps = await Promise.all(
          others.map(async (id) => (await status.status(5_000, id)).trainerLastStep),
        );
        return steps.every((step) => Number(step) === pauseBefore) ? true : undefined;
      },
      { timeoutMs: 30_000, description: 'the others’ pushes of step 6 on shard 1' },
    );
    expect((await status.status()).version).toBe(pauseBefore - 1);
    await status.saveCheckpoint().finally(() => status.close());
    const port = Number(pservers[victim]!.address.split(':').at(-1));
    await pservers[victim]!.process.kill();
    pservers[victim] = await start(victim, port, pservers[victim]!.checkpointDir);
    held.signal('SIGCONT');

    expectAccumulatedOnly(await Promise.all(trainers.map((t) => t.report)));
    await checkpointAll(pservers);
    expect(await checkpointed(pservers)).toEqual(expected);
    await Promise.all(pservers.map((p) => p.process.stop()));
  }, 120_000);
});
