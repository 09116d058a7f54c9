import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { metaFromJson, readCheckpointChain } from '@pserver/checkpoint';
import { parseBlockName } from '@pserver/proto';
import {
  LocalCluster,
  MasterDriver,
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
  blockSize: number;
  shardCounts: number[];
  liveReshape: { from: number; to: number; pauseBefore: number };
  trainers: { id: number; language: Language; initializer: boolean }[];
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

/** A shard's latest checkpoint: where its files are, and its meta (proto3 JSON). */
interface LatestCheckpoint {
  root: string;
  meta: unknown;
}

/** Standalone pservers' latest checkpoints, from their manifests. */
function fromManifests(pservers: PserverProcess[]): LatestCheckpoint[] {
  return pservers.map(({ checkpointDir }, index) => {
    const manifest = path.join(checkpointDir, `shard-${index}`, 'manifest.json');
    const { checkpoints } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as {
      checkpoints: unknown[];
    };
    return { root: checkpointDir, meta: checkpoints[0] };
  });
}

/** The tensors of each shard's latest checkpoint, blocks in order, as the reference prints them. */
async function checkpointed(shards: LatestCheckpoint[]): Promise<Record<string, FinalTensor>> {
  const blocks = new Map<string, { block: number; values: Buffer; slots: Map<string, Buffer> }[]>();
  const states = new Map<string, Pick<FinalTensor, 'updates' | 'scalars'>[]>();
  for (const { root, meta } of shards) {
    await readCheckpointChain(root, metaFromJson(meta), {
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
  // A test that fails before it waits for the report stops the trainer: that is not a second failure.
  report.catch(() => undefined);
  return { process: child, report };
}

/**
 * The scenario's trainers on `pservers` without a master, in the scenario's order: the
 * initializer first, the others once every shard is initialized — a push to a shard before its
 * initialization is refused (PSERVER_NOT_INITIALIZED), and a shard that holds no block of the
 * model is pushed to at every step's end.
 */
async function directTrainers(
  pservers: Pick<PserverProcess, 'address'>[],
  envOf: (id: number) => Record<string, string>,
): Promise<{ process: ManagedProcess; report: Promise<unknown> }[]> {
  const addresses = pservers.map((p) => p.address).join(',');
  const start = (id: number) => trainer(programs.get(id)!, id, addresses, envOf(id));
  const initializer = scenario.trainers.find((t) => t.initializer)!.id;
  const first = start(initializer);
  await waitFor(
    async () => {
      for (const { address } of pservers) {
        const driver = new PserverDriver(address);
        const { initialized } = await driver.status().finally(() => driver.close());
        if (!initialized) return false;
      }
      return true;
    },
    { timeoutMs: 60_000, description: 'every shard initialized' },
  );
  return scenario.trainers.map(({ id }) => (id === initializer ? first : start(id)));
}

/** Every push of a step's gradients waited in the open step until the step closed. */
function expectAccumulatedOnly(reports: unknown[]): void {
  for (const report of reports)
    expect(Object.keys((report as { outcomes: object }).outcomes)).toEqual([
      'PUSH_OUTCOME_ACCUMULATED',
    ]);
}

/** Checkpoints every shard (what the reference is compared with); their metas, in that order. */
async function checkpointAll(pservers: Pick<PserverProcess, 'address'>[]): Promise<unknown[]> {
  const metas: unknown[] = [];
  for (const pserver of pservers) {
    const driver = new PserverDriver(pserver.address);
    metas.push((await driver.saveCheckpoint().finally(() => driver.close())).meta);
  }
  return metas;
}

afterAll(() => stopAllProcesses());

// Each language's trainer program, and what the reference ends with.
let programs: Map<number, TrainerProgram>;
let expected: Record<string, FinalTensor>;
beforeAll(() => {
  programs = new Map(
    scenario.trainers.map(({ id, language }) => [id, trainerProgram(language, syncTrainers)]),
  );
  expected = reference();
});

describe('SYNC: three trainers in three languages', () => {
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
      const started = await directTrainers(pservers, () => ({}));
      const reports = await Promise.all(started.map((t) => t.report));
      expectAccumulatedOnly(reports);
      await checkpointAll(pservers);
      expect(await checkpointed(fromManifests(pservers))).toEqual(expected);
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
    const pauseBefore = 6;
    const paused = scenario.trainers.find((t) => t.language === 'typescript')!.id;
    const trainers = await directTrainers(pservers, (id): Record<string, string> =>
      id === paused ? { SYNC_TRAINER_PAUSE_BEFORE_STEP: String(pauseBefore) } : {},
    );
    const held = trainers[scenario.trainers.findIndex((t) => t.id === paused)]!.process;
    await held.waitForLine((line) => line === `{"pausing":${pauseBefore}}`, { timeoutMs: 60_000 });
    await held.waitUntilStopped({ timeoutMs: 10_000 });
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
    expect(await checkpointed(fromManifests(pservers))).toEqual(expected);
    await Promise.all(pservers.map((p) => p.process.stop()));
  }, 120_000);
});

// The same scenario on a cluster job (a master, 3 shards and a spare) whose shard count changes
// from 3 to 4 while it trains (`liveReshape`): the TypeScript trainer stops before step 7, the
// Python and Go trainers' pushes of step 7 wait in every shard's open step, and the count is
// changed. The primaries agree to close step 7 before they hand their shards back. Either the
// trainer comes back at once and step 7 closes everywhere with its contribution, or it comes back
// only once the job serves at 4: the primaries waited for step 7 (10 s), handed back with it open,
// and the new shards ask for the others' contributions again — the clients send what they kept,
// placed anew for the new count. Both end byte-identical to the reference.
const { from, to, pauseBefore } = scenario.liveReshape;
describe(`SYNC through a change of the running job’s shard count, ${from} → ${to}`, () => {
  it.each([
    ['step 7 closes before the hand-back', false],
    ['step 7 is handed back open and sent again, placed anew', true],
  ])(
    'ends byte-identical to the reference: %s',
    async (_, resumeOnceServed) => {
      const cluster = await LocalCluster.start({
        pservers: from,
        spares: to - from,
        blockSize: scenario.blockSize,
        // The stopped trainer keeps its session (and id) while the job changes under it.
        sessionTtlSeconds: 60,
        extraMasterArgs: ['--consistency', 'sync'],
      });
      const driver = new MasterDriver(cluster.masterAddresses[0]!);
      try {
        await cluster.waitUntilServed();
        const masters = `master=${cluster.masterAddresses.join(',')}`;
        const paused = scenario.trainers.find((t) => t.language === 'typescript')!.id;
        // One at a time in id order, so that the master's ids are the scenario's (the pservers fold
        // contributions in id order); each stops before step 1 until the roster is whole.
        const trainers: ReturnType<typeof trainer>[] = [];
        for (const { id } of scenario.trainers) {
          const steps = id === paused ? `1,${pauseBefore}` : '1';
          const started = trainer(programs.get(id)!, id, masters, {
            SYNC_TRAINER_PAUSE_BEFORE_STEP: steps,
          });
          trainers.push(started);
          await started.process.waitForLine((line) => line === '{"pausing":1}', {
            timeoutMs: 60_000,
          });
          await started.process.waitUntilStopped({ timeoutMs: 10_000 });
        }
        for (const { process } of trainers) process.signal('SIGCONT');
        const held = trainers[scenario.trainers.findIndex((t) => t.id === paused)]!.process;
        await held.waitForLine((line) => line === `{"pausing":${pauseBefore}}`, {
          timeoutMs: 60_000,
        });
        await held.waitUntilStopped({ timeoutMs: 10_000 });
        // Every shard holds the others' contributions to the step before the count changes.
        const others = scenario.trainers.filter((t) => t.id !== paused).map((t) => t.id);
        for (const { pserver } of cluster.serving().values()) {
          const status = new PserverDriver(pserver.address);
          await waitFor(
            async () => {
              const steps = await Promise.all(
                others.map(async (id) => Number((await status.status(5_000, id)).trainerLastStep)),
              );
              return steps.every((step) => step === pauseBefore) ? true : undefined;
            },
            { timeoutMs: 30_000, description: 'the others’ pushes on every shard' },
          ).finally(() => status.close());
        }
        const servedAtNewCount = (): Promise<unknown> =>
          waitFor(
            async () => {
              const status = await driver.status();
              return !status.reshape &&
                status.view?.shards.length === to &&
                status.view.shards.every((s) => s.serving)
                ? true
                : undefined;
            },
            { timeoutMs: 90_000, description: `the job serving at ${to} shards` },
          );
        await driver.setDesiredShards(to);
        if (resumeOnceServed) await servedAtNewCount();
        held.signal('SIGCONT');
        expectAccumulatedOnly(await Promise.all(trainers.map((t) => t.report)));
        await servedAtNewCount();

        const serving = cluster.serving();
        expect([...serving.keys()].sort()).toEqual([...Array(to).keys()]);
        const byIndex = [...serving.entries()].sort(([a], [b]) => a - b);
        const metas = await checkpointAll(byIndex.map(([, { pserver }]) => pserver));
        expect(
          await checkpointed(metas.map((meta) => ({ root: cluster.checkpointDir, meta }))),
        ).toEqual(expected);
      } finally {
        driver.close();
        await cluster.stop();
      }
    },
    180_000,
  );
});
