import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { connect, readRecords, type PserverClient } from '@pserver/client';
import { connectEtcd, JobKeys } from '@pserver/coordination';
import { RpcError } from '@pserver/rpc';
import {
  bundleScript,
  LocalCluster,
  MasterDriver,
  spawnNode,
  stopAllProcesses,
  tempDir,
  waitFor,
  type AppProcess,
} from '@pserver/testing';

// Dataset tasks and passes against real etcd and real master processes (one pserver each: the
// job needs one, the tasks do not). Trainers are in-process clients unless the test kills one.

afterAll(() => stopAllProcesses());

const startCluster = (masters: number): Promise<LocalCluster> =>
  LocalCluster.start({ pservers: 1, masters, leaseTtlSeconds: 2, sessionTtlSeconds: 2 });

/** The running master that leads now. */
async function leaderOf(cluster: LocalCluster): Promise<AppProcess> {
  return waitFor(
    async () => {
      for (const master of cluster.masters.filter((m) => m.process.running)) {
        const driver = new MasterDriver(master.address);
        const led = await driver.status().then(
          () => true,
          () => false,
        );
        driver.close();
        if (led) return master;
      }
      return undefined;
    },
    { timeoutMs: 20_000, description: 'a leading master' },
  );
}

async function rejection(promise: Promise<unknown>): Promise<RpcError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof RpcError)) throw new Error(`expected an RpcError, got ${String(err)}`);
  return err;
}

/** Writes JSON Lines files of known lines (of varied lengths); returns the directory and lines. */
function writeJsonLines(counts: number[]): { dir: string; lines: string[] } {
  const dir = tempDir('dataset');
  const lines: string[] = [];
  counts.forEach((count, file) => {
    const own = Array.from({ length: count }, (_, line) =>
      JSON.stringify({ file, line, pad: 'x'.repeat((line * 7) % 23) }),
    );
    fs.writeFileSync(path.join(dir, `part-${file}.jsonl`), own.join('\n') + '\n');
    lines.push(...own);
  });
  return { dir, lines };
}

/** Reads every task of `pass` through `client`, collecting the lines. */
async function consume(
  client: PserverClient,
  pass: number,
  into: string[],
  perTask?: () => Promise<void>,
): Promise<number> {
  let tasks = 0;
  for await (const task of client.tasks(pass)) {
    for await (const line of readRecords(task)) into.push(line);
    tasks++;
    await perTask?.();
  }
  return tasks;
}

const sorted = (lines: string[]): string[] => [...lines].sort();

describe('a dataset of JSON Lines files, three trainers, two masters', () => {
  let cluster: LocalCluster;
  let data: { dir: string; lines: string[] };
  const trainers: PserverClient[] = [];

  beforeAll(async () => {
    data = writeJsonLines([300, 500, 700]);
    cluster = await startCluster(2);
    for (let i = 0; i < 3; i++)
      trainers.push(await connect({ master: cluster.masterAddresses, name: `trainer-${i}` }));
  });

  afterAll(async () => {
    await Promise.all(trainers.map((t) => t.close()));
    await cluster?.stop();
  });

  it('refuses bad datasets by naming what is wrong, and writes nothing', async () => {
    const driver = new MasterDriver((await leaderOf(cluster)).address);
    const { trainerId } = await driver.registerTrainer('prober');
    const cases: [Parameters<MasterDriver['setDataset']>[0], status, string][] = [
      [{ files: { globs: [], taskBytes: 10 } }, status.INVALID_ARGUMENT, 'files.globs: empty'],
      [
        { files: { globs: [path.join(data.dir, 'missing-*.csv')], taskBytes: 10 } },
        status.INVALID_ARGUMENT,
        `no file matches '${path.join(data.dir, 'missing-*.csv')}'`,
      ],
      [
        { files: { globs: [path.join(data.dir, '*.jsonl')], taskBytes: 0 } },
        status.INVALID_ARGUMENT,
        'files.taskBytes: must be ≥ 1, got 0',
      ],
      [{}, status.INVALID_ARGUMENT, 'source: set files or records'],
    ];
    for (const [request, code, message] of cases) {
      const refused = await rejection(driver.setDataset(request));
      expect(refused.status).toBe(code);
      expect(refused.message).toContain(message);
    }
    expect(await driver.getTask(trainerId, 0)).toMatchObject({
      outcome: 'GET_TASK_OUTCOME_NO_DATASET',
    });
    const unknown = await rejection(driver.taskFinished(trainerId, { id: 3, dispatch: 1 }));
    expect(unknown).toMatchObject({ status: status.NOT_FOUND, code: 'MASTER_UNKNOWN_TASK' });

    const etcd = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    try {
      const keys = new JobKeys(cluster.options.job);
      expect(await etcd.getAll().prefix(`${keys.root}data/`).keys()).toEqual([]);
    } finally {
      etcd.close();
    }
    await driver.unregisterTrainer(trainerId);
    driver.close();
  });

  it('hands every line to exactly one trainer in each of two passes', async () => {
    const dataset = { files: { globs: [path.join(data.dir, '*.jsonl')], taskBytes: 1_000 } };
    const replies = await Promise.all(trainers.map((t) => t.setDataset(dataset)));
    expect(replies.filter((r) => !r.alreadySet)).toHaveLength(1);
    const tasks = replies[0]!.tasks;
    expect(tasks).toBeGreaterThan(30);

    for (const pass of [0, 1]) {
      const seen: string[] = [];
      const counts = await Promise.all(trainers.map((t) => consume(t, pass, seen)));
      expect(counts.reduce((a, b) => a + b)).toBe(tasks);
      expect(sorted(seen)).toEqual(sorted(data.lines));
    }

    const driver = new MasterDriver((await leaderOf(cluster)).address);
    const statusNow = await driver.status();
    expect(statusNow.pass).toMatchObject({ pass: 2, todo: tasks, pending: 0, done: 0 });
    // A different dataset now is refused; the same one is acknowledged.
    const different = await rejection(
      driver.setDataset({ files: { ...dataset.files, taskBytes: 999 } }),
    );
    expect(different).toMatchObject({
      status: status.FAILED_PRECONDITION,
      code: 'MASTER_DATASET_ALREADY_SET',
    });
    expect(await driver.setDataset(dataset)).toMatchObject({ tasks, alreadySet: true });
    const { trainerId } = await driver.registerTrainer('late');
    expect(await driver.getTask(trainerId, 1)).toMatchObject({
      outcome: 'GET_TASK_OUTCOME_PASS_OVER',
    });
    expect(await driver.getTask(trainerId, 3)).toMatchObject({
      outcome: 'GET_TASK_OUTCOME_PASS_NOT_STARTED',
    });
    await driver.unregisterTrainer(trainerId);
    driver.close();
  });

  it('goes on with the pass under the follower when the leader is killed, redoing nothing', async () => {
    const seen: string[] = [];
    let finished = 0;
    const leader = await leaderOf(cluster);
    const slow = async (): Promise<void> => {
      finished++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const consuming = Promise.all(trainers.map((t) => consume(t, 2, seen, slow)));
    await waitFor(() => finished >= 10 || undefined, {
      timeoutMs: 30_000,
      description: 'ten tasks finished',
    });
    await leader.process.kill();
    const before = finished;
    await consuming;
    expect(finished).toBeGreaterThan(before);
    expect(sorted(seen)).toEqual(sorted(data.lines));
    expect((await leaderOf(cluster)).address).not.toBe(leader.address);
  });

  it("gives a task back at once when the trainer's loop throws, and the others read it", async () => {
    const failing = (async () => {
      for await (const task of trainers[0]!.tasks(3))
        throw new Error(`cannot train on task ${task.id}`);
    })();
    await expect(failing).rejects.toThrow('cannot train on task');
    const seen: string[] = [];
    await Promise.all(trainers.slice(1).map((t) => consume(t, 3, seen)));
    expect(sorted(seen)).toEqual(sorted(data.lines));
    const leader = await leaderOf(cluster);
    expect(
      leader.process
        .jsonLines()
        .some(
          (e) =>
            e.msg === 'task failed' && e.reason === 'the trainer stopped before finishing the task',
        ),
    ).toBe(true);
  });
});

describe('a trainer killed while it holds a task', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await startCluster(1);
  });

  afterAll(() => cluster?.stop());

  it('gives the task to the others at once when its session ends, in the same pass', async () => {
    const data = writeJsonLines([200, 200]);
    const timeoutMs = 120_000;
    const dataset = {
      files: { globs: [path.join(data.dir, '*.jsonl')], taskBytes: 500 },
      taskTimeoutMs: timeoutMs,
    };
    const survivors = [
      await connect({ master: cluster.masterAddresses }),
      await connect({ master: cluster.masterAddresses }),
    ];
    await survivors[0]!.setDataset(dataset);

    const holder = spawnNode(
      bundleScript(path.join(__dirname, 'fixtures', 'task-holder.ts')),
      [cluster.masterAddresses.join(',')],
      { name: 'task-holder' },
    );
    const held = await holder.waitForLog((e) => e.event === 'holding', { timeoutMs: 30_000 });
    const started = performance.now();
    await holder.kill();

    const seen: string[] = [];
    await Promise.all(survivors.map((t) => consume(t, 0, seen)));
    const tookMs = performance.now() - started;
    expect(sorted(seen)).toEqual(sorted(data.lines));
    // Released when the session ended (TTL 2 s), not at the task's timeout.
    expect(tookMs).toBeLessThan(timeoutMs / 4);
    const leader = cluster.masters[0]!.process;
    expect(
      leader
        .jsonLines()
        .some(
          (e) =>
            e.msg === 'tasks of an ended session go back' &&
            e.trainer === held.trainerId &&
            JSON.stringify(e.tasks) === JSON.stringify([held.task]),
        ),
    ).toBe(true);
    await Promise.all(survivors.map((t) => t.close()));
  });
});

describe('20,000 generated-record tasks', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await startCluster(1);
  });

  afterAll(() => cluster?.stop());

  it('runs a full pass through a fast driver, sets a failing task aside, and keeps every etcd value small', async () => {
    const driver = new MasterDriver(cluster.masters[0]!.address, 30_000);
    const tasks = 20_000;
    const poisoned = 7;
    expect(
      await driver.setDataset({ records: { records: tasks * 3, taskRecords: 3 }, maxFailures: 2 }),
    ).toEqual({ tasks, alreadySet: false });
    const { trainerId } = await driver.registerTrainer('fast');
    const keepAlive = setInterval(
      () => void driver.keepAlive(trainerId).catch(() => undefined),
      500,
    );
    const handedOut = new Map<number, number>();
    try {
      const worker = async (): Promise<void> => {
        for (;;) {
          const reply = await driver.getTask(trainerId, 0);
          if (reply.outcome === 'GET_TASK_OUTCOME_PASS_OVER') return;
          if (reply.outcome !== 'GET_TASK_OUTCOME_TASK') {
            await new Promise((resolve) => setTimeout(resolve, 50));
            continue;
          }
          const task = reply.task!;
          handedOut.set(task.id, (handedOut.get(task.id) ?? 0) + 1);
          expect(task.records).toEqual({ start: task.id * 3, end: task.id * 3 + 3 });
          if (task.id === poisoned) await driver.taskFailed(trainerId, task, 'poisoned');
          else await driver.taskFinished(trainerId, task, 3);
        }
      };
      await Promise.all(Array.from({ length: 32 }, worker));
    } finally {
      clearInterval(keepAlive);
    }
    expect(handedOut.size).toBe(tasks);
    expect(handedOut.get(poisoned)).toBe(3);
    expect([...handedOut].filter(([id, n]) => id !== poisoned && n !== 1)).toEqual([]);
    const passOver = cluster.masters[0]!.process.jsonLines().find((e) => e.msg === 'pass over');
    expect(passOver).toMatchObject({
      pass: 0,
      done: tasks - 1,
      failed: 1,
      recordsProcessed: (tasks - 1) * 3,
    });
    expect((await driver.status()).pass).toMatchObject({ pass: 1, todo: tasks });

    // Every value of the job is small: a range scan over all its keys.
    const etcd = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    try {
      const keys = new JobKeys(cluster.options.job);
      const values = await etcd.getAll().prefix(keys.root).buffers();
      const taskKeys = Object.keys(values).filter((k) => k.startsWith(keys.taskPrefix));
      expect(taskKeys).toHaveLength(tasks);
      const largest = Math.max(...Object.values(values).map((v) => v.length));
      expect(largest).toBeLessThan(1024 * 1024);
    } finally {
      etcd.close();
    }
    driver.close();
  });
});
