/**
 * A full pass over a dataset of 1,000,000 tasks (generated records, one per task) through one
 * master process: SetDataset, then GetTask + TaskFinished for every task from this process with
 * 64 calls in flight, then a new master loading the state. Next to it, measured in the same run:
 * leader-guarded single-put transactions against the same etcd, one at a time and 16 in flight
 * (what every stored change costs), and a bare grpc-js unary echo with 64 calls in flight (what
 * the two calls of each task cost with nothing behind them).
 *
 *   npx nx run tools:bench-dataset [-- --tasks 1000000 --in-flight 64]
 */
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
import {
  credentials,
  makeGenericClientConstructor,
  Metadata,
  type Client,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { connectEtcd, JobKeys } from '@pserver/coordination';
import { bindServer, createGrpcServer } from '@pserver/rpc';
import {
  MasterDriver,
  startEtcd,
  startMasterProcess,
  stopAllProcesses,
  waitFor,
  type AppProcess,
} from '@pserver/testing';

const rate = (count: number, ms: number): string => `${Math.round((count / ms) * 1000)}/s`;

const identity = (b: Buffer): Buffer => b;
const echoService: ServiceDefinition = {
  echo: {
    path: '/bench.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

/** The bare grpc-js server, in its own process as the master is. */
async function echoServer(): Promise<void> {
  const server = createGrpcServer({ maxMessageBytes: 1 << 20, flowControlWindowBytes: 1 << 20 });
  server.addService(echoService, {
    echo: (call: { request: Buffer }, callback: (err: null, reply: Buffer) => void) =>
      callback(null, call.request),
  });
  process.send?.({ port: await bindServer(server, '127.0.0.1', 0) });
}

/** Unary echo calls per second of a 60-byte message with `parallel` in flight. */
async function echoRate(calls: number, parallel: number): Promise<number> {
  const child = fork(__filename, ['echo-server'], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m: { port: number }) => resolve(m.port)),
  );
  const Echo = makeGenericClientConstructor(echoService, 'Echo');
  const client = new Echo(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as Client &
    Record<'echo', (req: Buffer, md: Metadata, cb: (err: Error | null) => void) => void>;
  const message = Buffer.alloc(60, 1);
  const call = (): Promise<void> =>
    new Promise((resolve, reject) =>
      client.echo(message, new Metadata(), (err) => (err ? reject(err) : resolve())),
    );
  let next = 0;
  const run = (n: number): Promise<unknown> =>
    Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next++ < n) await call();
      }),
    );
  await run(2_000);
  next = 0;
  const started = performance.now();
  await run(calls);
  const perSecond = (calls / (performance.now() - started)) * 1000;
  client.close();
  child.kill('SIGKILL');
  return perSecond;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tasks: { type: 'string', default: '1000000' },
      'in-flight': { type: 'string', default: '64' },
    },
  });
  const tasks = Number(values.tasks);
  const inFlight = Number(values['in-flight']);
  const echo = await echoRate(40_000, inFlight);
  console.log(`bare grpc-js unary echo, ${inFlight} in flight: ${Math.round(echo)} calls/s`);

  const etcdServer = await startEtcd();
  const etcd = connectEtcd({ endpoints: [etcdServer.endpoint] });
  const revision = async (): Promise<number> =>
    Number((await etcd.get('/').exec()).header.revision);

  // Baseline: the guarded put every stored change is, without the master around it.
  const guard = '/bench/leader';
  await etcd.put(guard).value('x');
  const guardRevision = Number((await etcd.get(guard).exec()).kvs[0]!.create_revision);
  const guardedPut = (i: number): Promise<unknown> =>
    etcd
      .if(guard, 'Create', '==', guardRevision)
      .then(etcd.put(`/bench/task/${i}`).value('{"pass":0,"status":"pending"}'))
      .commit();
  const baseline = async (n: number, parallel: number): Promise<number> => {
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next < n) await guardedPut(next++);
      }),
    );
    return (n / (performance.now() - started)) * 1000;
  };
  await baseline(500, 1);
  const serial = await baseline(5_000, 1);
  const parallel16 = await baseline(20_000, 16);
  console.log(
    `guarded txn, one at a time: ${Math.round(serial)}/s; 16 in flight: ${Math.round(parallel16)}/s`,
  );

  const startMaster = (): Promise<AppProcess> =>
    startMasterProcess(
      [
        '--etcd-endpoints',
        etcdServer.endpoint,
        '--job',
        'bench',
        '--session-ttl-s',
        '30',
        '--log-level',
        'info',
      ],
      { name: 'master' },
    );
  let master = await startMaster();
  const driver = new MasterDriver(master.address, 120_000);
  await waitFor(
    () =>
      driver.status().then(
        () => true,
        () => false,
      ),
    {
      timeoutMs: 30_000,
      description: 'the master leads',
    },
  );

  const beforeSet = await revision();
  let started = performance.now();
  await driver.setDataset({ records: { records: tasks, taskRecords: 1 } });
  console.log(
    `SetDataset of ${tasks} tasks: ${Math.round(performance.now() - started)} ms, ${(await revision()) - beforeSet} revisions`,
  );

  const { trainerId } = await driver.registerTrainer('bench');
  const keepAlive = setInterval(
    () => void driver.keepAlive(trainerId).catch(() => undefined),
    5_000,
  );
  const beforePass = await revision();
  started = performance.now();
  let finished = 0;
  const progress = setInterval(
    () => console.log(`  ${finished} tasks, ${rate(finished, performance.now() - started)}`),
    10_000,
  );
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (;;) {
        const reply = await driver.getTask(trainerId, 0);
        if (reply.outcome === 'GET_TASK_OUTCOME_PASS_OVER') return;
        if (reply.outcome !== 'GET_TASK_OUTCOME_TASK') {
          await new Promise((resolve) => setTimeout(resolve, 20));
          continue;
        }
        await driver.taskFinished(trainerId, reply.task!, 1);
        finished++;
      }
    }),
  );
  clearInterval(progress);
  const passMs = performance.now() - started;
  const passRate = (tasks / passMs) * 1000;
  const passRevisions = (await revision()) - beforePass;
  console.log(
    `pass of ${tasks} tasks (GetTask + TaskFinished each, ${inFlight} in flight): ${(passMs / 1000).toFixed(1)} s, ${Math.round(passRate)} tasks/s = ${(passRate / serial).toFixed(2)}× the serial guarded txn rate, ${(passRate / parallel16).toFixed(2)}× the 16-in-flight rate, ${((2 * passRate) / echo).toFixed(2)}× the bare echo's calls (two per task); ${passRevisions} revisions (${(passRevisions / tasks).toFixed(3)} per task, ${((2 * tasks) / passRevisions).toFixed(1)} changes per transaction)`,
  );

  // Every value of the job stays small.
  const keys = new JobKeys('bench');
  let largest = 0;
  let count = 0;
  for (let start = keys.root; ;) {
    const page = await etcd
      .getAll()
      .inRange({ start, end: `${keys.root.slice(0, -1)}0` })
      .limit(10_000)
      .exec();
    for (const kv of page.kvs) largest = Math.max(largest, kv.value.length);
    count += page.kvs.length;
    if (!page.more || page.kvs.length === 0) break;
    start = `${page.kvs.at(-1)!.key.toString()}\0`;
  }
  const status = await etcd.maintenance.status();
  console.log(
    `${count} keys in the job, largest value ${largest} bytes, etcd db ${(Number(status.dbSize) / 2 ** 20).toFixed(0)} MiB`,
  );

  // A new leader loads the whole state back.
  clearInterval(keepAlive);
  driver.close();
  await master.process.stop();
  master = await startMaster();
  const logged = async (msg: string): Promise<number> =>
    Date.parse(
      String((await master.process.waitForLog((e) => e.msg === msg, { timeoutMs: 600_000 })).time),
    );
  const electedAt = await logged('elected; loading the job state');
  const loadedAt = await logged('dataset loaded');
  console.log(`a new leader loaded the dataset (${tasks} tasks) in ${loadedAt - electedAt} ms`);

  etcd.close();
  await stopAllProcesses();
  await etcdServer.stop();
}

if (process.argv[2] === 'echo-server') void echoServer();
else
  main().catch(async (err: unknown) => {
    console.error(err);
    await stopAllProcesses();
    process.exit(1);
  });
