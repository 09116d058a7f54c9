import fs from 'node:fs';
import path from 'node:path';
import { visit } from 'jsonc-parser';
import {
  spawnNode,
  stopAllProcesses,
  tempDir,
  waitFor,
  workspaceRoot,
} from '@pserver/local-cluster';

// The demo as a newcomer runs it, in its short non-interactive form, with chaos on.
const demoBundle = path.join(workspaceRoot(), 'dist', 'apps', 'demo', 'main.js');

interface DemoEvent {
  kind: string;
  t: number;
  [field: string]: unknown;
}

const eventsOf = (outDir: string): DemoEvent[] => {
  const file = path.join(outDir, 'events.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as DemoEvent);
};

/**
 * The keys written twice in one object of a JSON text, at any depth. JSON.parse keeps the last
 * silently (and so do jq and Loki); jsonc-parser reports every property as it reads it.
 */
const repeatedKeys = (text: string): string[] => {
  const objects: Set<string>[] = [];
  const repeated: string[] = [];
  visit(text, {
    onObjectBegin: () => void objects.push(new Set()),
    onObjectEnd: () => void objects.pop(),
    onObjectProperty: (key) => {
      const seen = objects.at(-1)!;
      if (seen.has(key)) repeated.push(key);
      seen.add(key);
    },
  });
  return repeated;
};

/** The JSON lines in the logs of every process of a run that are not strict JSON with unique keys. */
const badJsonLines = (logDir: string): string[] =>
  fs.readdirSync(logDir).flatMap((file) =>
    fs
      .readFileSync(path.join(logDir, file), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .flatMap((line) => {
        try {
          JSON.parse(line);
        } catch {
          return [`${file}: not JSON: ${line}`];
        }
        const repeated = repeatedKeys(line);
        return repeated.length ? [`${file}: ${repeated.join(', ')} repeated: ${line}`] : [];
      }),
  );

/** The JSON lines of the logs of the processes whose file name matches `name`. */
const jsonLinesOf = (logDir: string, name: RegExp): Record<string, unknown>[] =>
  fs
    .readdirSync(logDir)
    .filter((file) => name.test(file))
    .flatMap((file) =>
      fs
        .readFileSync(path.join(logDir, file), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    );

/** True while a process with this pid exists (a zombie counts: it was not reaped). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

afterAll(stopAllProcesses);

/**
 * The growth from 3 to 4 shards as the events tell it: asked, the old shards handed back, every
 * shard of 4 serving, every trainer stepping again, in that order, all before the first kill.
 */
function expectGrowth(events: DemoEvent[]): void {
  expect(events.filter((e) => e.kind.startsWith('growth ')).map((e) => e.kind)).toEqual(
    expect.arrayContaining(['growth asked', 'growth served', 'growth resumed']),
  );
  const growth = events.find((e) => e.kind === 'growth resumed')!;
  expect(growth).toMatchObject({ from: 3, to: 4, askedOf: expect.stringMatching(/^master-/) });
  expect(growth.handedBackAt).toBeGreaterThan(growth.askedAt as number);
  expect(growth.servedAt).toBeGreaterThan(growth.handedBackAt as number);
  expect(growth.resumedAt).toBeGreaterThanOrEqual(growth.servedAt as number);
  expect(events.find((e) => e.kind === 'killed')?.killedAt).toBeGreaterThan(
    growth.resumedAt as number,
  );
}

describe('npm run demo -- --ci', () => {
  it('trains past the promised accuracy through a growth to 4 shards, a pserver and a master kill, and leaves no process behind', async () => {
    const outDir = tempDir('demo-ci');
    const demo = spawnNode(demoBundle, ['--ci', '--out', outDir], { name: 'demo-ci' });
    const status = await demo.exited;
    if (status.code !== 0) throw demo.failure(`exited with ${JSON.stringify(status)}`);

    const events = eventsOf(outDir);
    const accuracy = events.find((e) => e.kind === 'accuracy')?.accuracy;
    expect(accuracy).toBeGreaterThanOrEqual(0.88);
    // Grown 3 → 4 with one more pserver: a spare is left for the kill's failover.
    expectGrowth(events);
    const grown = events.find((e) => e.kind === 'growth audited')!;
    expect(grown.started).toEqual([{ name: 'pserver-4', pid: expect.any(Number) }]);
    expect(grown.audit).toEqual({ acknowledged: expect.any(Number), lost: 0, doubled: 0 });
    expect((grown.audit as { acknowledged: number }).acknowledged).toBeGreaterThan(20);
    const killed = events.filter((e) => e.kind === 'killed');
    expect(killed.map((e) => e.kind === 'killed' && e.index !== undefined)).toEqual([true, false]);
    for (const failure of killed) {
      const resumed = events.find((e) => e.kind === 'resumed' && e.pid === failure.pid);
      const takenOver = events.find((e) => e.kind === 'taken over' && e.pid === failure.pid);
      expect(takenOver?.takenOverBy).toEqual(expect.any(String));
      expect(takenOver?.takenOverBy).not.toBe(failure.victim);
      expect(resumed?.resumedAt).toBeGreaterThan(failure.killedAt as number);
    }
    const pserverTakeover = events.find((e) => e.kind === 'taken over' && e.index !== undefined)!;
    expect(pserverTakeover.epochAfter).toBeGreaterThan(pserverTakeover.epochBefore as number);
    expect(pserverTakeover.restoredUpdates).toBeGreaterThan(0);
    // Replicas 0: the audit may find updates acknowledged after the restored checkpoint lost.
    const audit = events.find((e) => e.kind === 'audit')!;
    expect(audit.acknowledged).toBeGreaterThan(100);
    expect(audit.doubled).toBe(0);

    const started = events.filter((e) => e.kind === 'started');
    expect(started.map((e) => String(e.name).replace(/^etcd-\d+$/, 'etcd')).sort()).toEqual([
      'etcd',
      'master-0',
      'master-1',
      'pserver-0',
      'pserver-1',
      'pserver-2',
      'pserver-3',
      'pserver-4',
      'trainer-0',
      'trainer-1',
      'trainer-2',
      'trainer-3',
    ]);
    for (const { pid } of started) expect(alive(pid as number)).toBe(false);
    const report = fs.readFileSync(path.join(outDir, 'demo-report.html'), 'utf8');
    expect(report).toContain('<svg');
    expect(report).toContain(`kill -9 ${String(killed[0]!.victim)}`);
    expect(report).toContain('<h2>Live growth: 3 → 4 shards</h2>');
    expect(demo.lines.join('\n')).toContain('demo-report.html');
    expect(
      demo.lines.some((line) => /^ {2}grow 3 → 4 shards: serving at 4 after /.test(line)),
    ).toBe(true);

    // Every shard of 4 took the share its receiver copied from the 3 old ones while they served.
    const logDir = path.join(outDir, 'logs');
    const shares = jsonLinesOf(logDir, /^pserver-/).filter(
      (line) => line['msg'] === 'took its share from a live move',
    );
    expect(shares.map((line) => [line['from'], line['to']])).toEqual(Array(4).fill([3, 4]));
    // Every process's log lines are JSON with each key once, for jq and Loki to read whole.
    expect(fs.readdirSync(logDir).length).toBeGreaterThanOrEqual(started.length);
    expect(badJsonLines(logDir).slice(0, 5)).toEqual([]);
  });

  it("with --replicas 1, promotes the killed pserver's replica and loses no acknowledged update", async () => {
    const outDir = tempDir('demo-replicas');
    const demo = spawnNode(demoBundle, ['--ci', '--replicas', '1', '--out', outDir], {
      name: 'demo-replicas',
    });
    const status = await demo.exited;
    if (status.code !== 0) throw demo.failure(`exited with ${JSON.stringify(status)}`);
    const events = eventsOf(outDir);
    expect(events.find((e) => e.kind === 'accuracy')?.accuracy).toBeGreaterThanOrEqual(0.88);
    const pserverTakeover = events.find((e) => e.kind === 'taken over' && e.index !== undefined)!;
    expect(pserverTakeover.promoted).toBe(true);
    expect(pserverTakeover.restoredUpdates).toBeUndefined();
    const audit = events.find((e) => e.kind === 'audit')!;
    expect(audit.acknowledged).toBeGreaterThan(100);
    expect({ lost: audit.lost, doubled: audit.doubled }).toEqual({ lost: 0, doubled: 0 });
    expectGrowth(events);
    expect(events.find((e) => e.kind === 'growth audited')?.audit).toMatchObject({
      lost: 0,
      doubled: 0,
    });
    const report = fs.readFileSync(path.join(outDir, 'demo-report.html'), 'utf8');
    expect(report).toContain(`<b>0</b> of ${String(audit.acknowledged)} acknowledged updates lost`);
    // 3 primaries, their 3 replicas and a spare; then 2 more for the 4th shard and its replica.
    const started = events.filter((e) => e.kind === 'started' && /^pserver-/.test(String(e.name)));
    expect(started).toHaveLength(9);
    for (const { pid } of events.filter((e) => e.kind === 'started'))
      expect(alive(pid as number)).toBe(false);
  });

  it('stops every process within a few seconds of Ctrl-C', async () => {
    const outDir = tempDir('demo-sigint');
    const demo = spawnNode(demoBundle, ['--ci', '--out', outDir], { name: 'demo-sigint' });
    // Wait until the trainers are training, then interrupt.
    await waitFor(
      () => eventsOf(outDir).some((e) => e.kind === 'started' && e.name === 'trainer-3'),
      {
        timeoutMs: 120_000,
        description: 'the trainers started',
      },
    );
    await demo.waitForLine((line) => line.includes('samples/s'), { timeoutMs: 120_000 });
    const started = eventsOf(outDir).filter((e) => e.kind === 'started');
    const interruptedAt = Date.now();
    demo.signal('SIGINT');
    const status = await demo.exited;
    expect(Date.now() - interruptedAt).toBeLessThan(10_000);
    expect(status.code).toBe(130);
    for (const { pid } of started) expect(alive(pid as number)).toBe(false);
  });
});

describe('npm run demo -- --model ctr --consistency sync --ci', () => {
  // Synchronous steps with embedding tables: each step's rows are averaged over the trainers like
  // the MLP's gradients (the Python client; ASYNC is clients/python/tests/test_ctr_example.py).
  it('trains the PyTorch click model in SYNC past its AUC floor through a growth to 4 shards and a pserver kill', async () => {
    const outDir = tempDir('demo-ctr');
    const demo = spawnNode(
      demoBundle,
      ['--model', 'ctr', '--consistency', 'sync', '--ci', '--out', outDir],
      { name: 'demo-ctr' },
    );
    const status = await demo.exited;
    if (status.code !== 0) throw demo.failure(`exited with ${JSON.stringify(status)}`);

    const events = eventsOf(outDir);
    const judged = events.find((e) => e.kind === 'auc')!;
    // The reduced log's floor (demo README); nothing ranks better than the planted truth.
    expect(judged.auc).toBeGreaterThanOrEqual(0.72);
    expect(judged.auc).toBeLessThan(judged.optimalAuc as number);
    expect(judged.logloss).toBeGreaterThan(judged.optimalLogloss as number);
    // The first trainer's evaluations during the run, each a line of the story.
    const evaluations = events.filter((e) => e.kind === 'model' && e.trainer === 'ctr-0');
    expect(evaluations.length).toBeGreaterThanOrEqual(5);

    expectGrowth(events);
    const killed = events.filter((e) => e.kind === 'killed');
    expect(killed.map((e) => e.index)).toEqual([expect.any(Number)]);
    const takenOver = events.find((e) => e.kind === 'taken over')!;
    expect(takenOver.takenOverBy).not.toBe(killed[0]!.victim);
    expect(takenOver.restoredUpdates).toBeGreaterThan(0);
    expect(events.find((e) => e.kind === 'resumed')?.resumedAt).toBeGreaterThan(
      killed[0]!.killedAt as number,
    );
    const trainers = events.filter((e) => e.kind === 'trainer');
    expect(trainers.map((e) => e.name).sort()).toEqual(['ctr-0', 'ctr-1']);
    for (const t of trainers) expect(t.steps).toBeGreaterThan(100);

    const started = events.filter((e) => e.kind === 'started');
    for (const { pid } of started) expect(alive(pid as number)).toBe(false);
    // Every shard served in SYNC, the killed one's successor too.
    const serving = jsonLinesOf(path.join(outDir, 'logs'), /^pserver-/).filter(
      (line) => line['msg'] === 'serving',
    );
    expect(serving.length).toBeGreaterThanOrEqual(4);
    expect(new Set(serving.map((line) => line['consistency']))).toEqual(new Set(['sync']));
    const report = fs.readFileSync(path.join(outDir, 'demo-report.html'), 'utf8');
    expect(report).toContain('<h2>Held-out AUC</h2>');
    expect(report).toContain(`held-out AUC <b>${(judged.auc as number).toFixed(3)}</b>`);
    expect(badJsonLines(path.join(outDir, 'logs')).slice(0, 5)).toEqual([]);
  });
});

describe('nx run demo:cluster', () => {
  it('keeps the cluster up after training and stops every process on Ctrl-C', async () => {
    const outDir = tempDir('demo-cluster');
    const bundle = path.join(workspaceRoot(), 'dist', 'apps', 'demo', 'cluster.js');
    const run = spawnNode(bundle, ['--trainers', '1', '--passes', '1', '--out', outDir], {
      name: 'demo-cluster',
    });
    await run.waitForLine((line) => line.includes('Ctrl-C stops everything'), {
      timeoutMs: 120_000,
    });
    // Every process's lines come with its name in front, the trainer's too.
    await run.waitForLine((line) => /^trainer-0 +\| done/.test(line), { timeoutMs: 180_000 });
    expect(run.lines.some((line) => /^pserver-0 +\| info serving/.test(line))).toBe(true);
    const pids = run.lines.flatMap((line) => {
      const match = /^started \S+ \(pid (\d+)\)$/.exec(line);
      return match ? [Number(match[1])] : [];
    });
    expect(pids).toHaveLength(1 + 2 + 4 + 1); // etcd, masters, pservers and the spare, a trainer
    // The trainer exits when done; the rest stays up.
    await waitFor(() => pids.filter(alive).length === pids.length - 1, {
      timeoutMs: 10_000,
      description: 'the trainer exited',
    });
    expect(pids.filter(alive)).toHaveLength(pids.length - 1);
    const interruptedAt = Date.now();
    run.signal('SIGINT');
    const status = await run.exited;
    expect(Date.now() - interruptedAt).toBeLessThan(10_000);
    expect(status.code).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });
});

describe('mixed training in SYNC steps', () => {
  // Uneven data: a trainer with no task left takes empty steps (zero-sample contributions) until
  // the pass ends, in each language, so no step waits for it; through a pserver and a master kill.
  it('trains the model with 2 TypeScript, 1 Python and 1 Go trainer past the accuracy floor', async () => {
    const outDir = tempDir('demo-mixed');
    const demo = spawnNode(
      demoBundle,
      [
        ...['--ci', '--consistency', 'sync'],
        ...['--trainers', '2', '--python-trainers', '1', '--go-trainers', '1', '--out', outDir],
      ],
      { name: 'demo-mixed' },
    );
    const status = await demo.exited;
    if (status.code !== 0) throw demo.failure(`exited with ${JSON.stringify(status)}`);
    const events = eventsOf(outDir);
    expect(events.find((e) => e.kind === 'accuracy')?.accuracy).toBeGreaterThanOrEqual(0.88);
    const steps = Object.fromEntries(
      events.filter((e) => e.kind === 'trainer').map((e) => [e.name, e.steps]),
    );
    expect(Object.keys(steps).sort()).toEqual(['go-0', 'python-0', 'trainer-0', 'trainer-1']);
    for (const count of Object.values(steps)) expect(count).toBeGreaterThan(10);
    expectGrowth(events);
  });
});
