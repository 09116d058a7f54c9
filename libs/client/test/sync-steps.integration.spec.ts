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
  workspaceRoot,
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

/** Runs a trainer to its end; resolves with the line it printed. */
async function train(program: TrainerProgram, id: number, addresses: string): Promise<unknown> {
  const child = spawnProcess(
    program.command,
    [...program.args, scenarioFile, String(id), addresses],
    { name: `sync-${program.language}-${id}`, env: program.env },
  );
  const status = await child.exited;
  if (status.code !== 0) throw child.failure(`exited ${String(status.code ?? status.signal)}`);
  return JSON.parse(child.lines.find((line) => line.startsWith('{"trainer"'))!);
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
        scenario.trainers.map(({ id }) => train(programs.get(id)!, id, addresses)),
      );
      // Every push of a step's gradients waited in the open step until the step closed.
      for (const report of reports)
        expect(Object.keys((report as { outcomes: object }).outcomes)).toEqual([
          'PUSH_OUTCOME_ACCUMULATED',
        ]);

      for (const pserver of pservers) {
        const driver = new PserverDriver(pserver.address);
        await driver.saveCheckpoint().finally(() => driver.close());
      }
      expect(await checkpointed(pservers)).toEqual(expected);
      await Promise.all(pservers.map((p) => p.process.stop()));
    },
    120_000,
  );
});
