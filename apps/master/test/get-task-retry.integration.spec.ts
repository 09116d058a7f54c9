import type { GetTaskResponse__Output } from '@pserver/proto';
import { connectEtcd, JobKeys } from '@pserver/coordination';
import { callUnary } from '@pserver/rpc';
import {
  LocalCluster,
  MasterDriver,
  stopAllProcesses,
  waitFor,
  type AppProcess,
} from '@pserver/testing';

// A GetTask whose reply is lost (thrown away here) is sent again with the same request id, as the
// clients do: to the same leader, and to the next one after kill -9 of the leader. The retry gets
// the task already taken for it, so the pass ends without waiting out the task timeout (the
// default, 5 min: far longer than any bound below) and no task is left pending.

afterAll(() => stopAllProcesses());

const tasks = 6;

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

/** GetTask with a request id: the raw call a client makes on every attempt of one GetTask. */
function getTask(
  driver: MasterDriver,
  trainerId: number,
  pass: number,
  requestId: string,
): Promise<GetTaskResponse__Output> {
  return callUnary(
    driver.client.getTask.bind(driver.client),
    { context: { trainerId, pass }, requestId },
    { timeoutMs: 10_000 },
  );
}

/** Takes and finishes tasks of `pass` under fresh request ids until the pass is over. */
async function finishPass(driver: MasterDriver, trainerId: number, pass: number): Promise<number> {
  let finished = 0;
  for (let n = 0; ; n++) {
    const reply = await getTask(driver, trainerId, pass, `drain-${pass}-${n}`);
    if (reply.outcome === 'GET_TASK_OUTCOME_PASS_OVER') return finished;
    // A task left pending under this live trainer would be NO_TASK_AVAILABLE here for 5 min.
    expect(reply.outcome).toBe('GET_TASK_OUTCOME_TASK');
    await driver.taskFinished(trainerId, reply.task!, 1);
    finished++;
  }
}

/** The `data/tasks/…` records etcd holds as pending. */
async function pendingInEtcd(cluster: LocalCluster): Promise<unknown[]> {
  const etcd = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
  try {
    const keys = new JobKeys(cluster.options.job);
    const values = await etcd.getAll().prefix(keys.taskPrefix).strings();
    return Object.values(values)
      .map((v) => JSON.parse(v) as { status: string })
      .filter((r) => r.status === 'pending');
  } finally {
    etcd.close();
  }
}

describe('a GetTask retried with the same request id after its reply was lost', () => {
  let cluster: LocalCluster;
  let trainerId: number;
  let keepAlive: NodeJS.Timeout;
  const drivers: MasterDriver[] = [];

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 1,
      masters: 2,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 4,
    });
    drivers.push(...cluster.masters.map((m) => new MasterDriver(m.address)));
    const leader = drivers[cluster.masters.indexOf(await leaderOf(cluster))]!;
    // No task timeout given: the master's default (5 min).
    await leader.setDataset({ records: { records: tasks, taskRecords: 1 } });
    trainerId = Number((await leader.registerTrainer('retrying')).trainerId);
    // The session is kept alive on whichever replica leads (a follower refuses, harmlessly).
    keepAlive = setInterval(() => {
      for (const d of drivers) void d.keepAlive(trainerId).catch(() => undefined);
    }, 300);
  });

  afterAll(async () => {
    clearInterval(keepAlive);
    drivers.forEach((d) => d.close());
    await cluster?.stop();
  });

  const driverOf = async (): Promise<MasterDriver> =>
    drivers[cluster.masters.indexOf(await leaderOf(cluster))]!;

  it('gets the same task from the same leader; the pass ends and nothing is left pending', async () => {
    const leader = await driverOf();
    const lost = await getTask(leader, trainerId, 0, 'request-a');
    expect(lost.outcome).toBe('GET_TASK_OUTCOME_TASK');
    const again = await getTask(leader, trainerId, 0, 'request-a');
    expect(again.task).toMatchObject({ id: lost.task!.id, dispatch: lost.task!.dispatch });
    expect(Number(again.task!.timeoutMs)).toBeLessThanOrEqual(Number(lost.task!.timeoutMs));
    expect((await leader.status()).pass).toMatchObject({ pending: 1, todo: tasks - 1 });

    await leader.taskFinished(trainerId, again.task!, 1);
    expect(await finishPass(leader, trainerId, 0)).toBe(tasks - 1);
    expect((await leader.status()).pass).toMatchObject({ pass: 1, pending: 0, todo: tasks });
    expect(await pendingInEtcd(cluster)).toEqual([]);
  }, 60_000);

  it('gets the same task, same dispatch and deadline, from the next leader after kill -9 of the leader', async () => {
    const leaderProcess = await leaderOf(cluster);
    const lost = await getTask(await driverOf(), trainerId, 1, 'request-b');
    expect(lost.outcome).toBe('GET_TASK_OUTCOME_TASK');
    const lostAt = Date.now();
    await leaderProcess.process.kill();

    const next = await waitFor(
      async () => {
        const leader = await leaderOf(cluster);
        return leader === leaderProcess ? undefined : leader;
      },
      { timeoutMs: 30_000, description: 'the follower leading' },
    );
    const driver = drivers[cluster.masters.indexOf(next)]!;
    const again = await getTask(driver, trainerId, 1, 'request-b');
    const againAt = Date.now();
    expect(again.task).toMatchObject({ id: lost.task!.id, dispatch: lost.task!.dispatch });
    // The same deadline: the time left shrank by about the time that passed (clocks are shared).
    const shrank = Number(lost.task!.timeoutMs) - Number(again.task!.timeoutMs);
    expect(shrank).toBeGreaterThanOrEqual(againAt - lostAt - 1_000);
    expect(shrank).toBeLessThanOrEqual(againAt - lostAt + 1_000);

    await driver.taskFinished(trainerId, again.task!, 1);
    expect(await finishPass(driver, trainerId, 1)).toBe(tasks - 1);
    expect((await driver.status()).pass).toMatchObject({ pass: 2, pending: 0, todo: tasks });
    expect(await pendingInEtcd(cluster)).toEqual([]);
  }, 90_000);
});
