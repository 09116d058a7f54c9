import fs from 'node:fs';
import path from 'node:path';
import { EtcdPermissionDeniedError } from 'etcd3';
import {
  connectEtcd,
  JobKeys,
  MasterTerm,
  readJobState,
  type EtcdClient,
} from '@pserver/coordination';
import {
  appBundle,
  bytesOf,
  EtcdAuth,
  float32s,
  generateCertificates,
  MasterDriver,
  PserverDriver,
  sleep,
  spawnNode,
  startEtcd,
  startMasterProcess,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  waitFor,
  type AppProcess,
  type ClusterCertificates,
  type EtcdServer,
  type ExitStatus,
  type ManagedProcess,
  type PserverProcess,
} from '@pserver/testing';

// A master and pservers against an etcd that serves TLS and checks client certificates, then
// one that also has authentication on, with the users and roles `tools/etcd/auth.sh` creates
// (SECURITY.md, "etcd"). Every bound below only catches hangs.
const leaseTtlSeconds = 2;
const tokenTtlSeconds = 3;

afterAll(stopAllProcesses);

/** Everything a describe block starts, stopped by PID in reverse order. */
class Started {
  private readonly processes: ManagedProcess[] = [];
  private readonly clients: EtcdClient[] = [];
  etcd: EtcdServer | undefined;

  process<T extends { process: ManagedProcess }>(app: T): T {
    this.processes.push(app.process);
    return app;
  }

  client(client: EtcdClient): EtcdClient {
    this.clients.push(client);
    return client;
  }

  async stop(): Promise<void> {
    for (const client of this.clients) client.close();
    for (const child of this.processes.reverse()) await child.stop({ graceMs: 10_000 });
    await this.etcd?.stop();
  }
}

function startMaster(started: Started, etcdArgs: string[], job: string): Promise<AppProcess> {
  return startMasterProcess(
    [
      ...etcdArgs,
      '--job',
      job,
      '--desired-pservers',
      '1',
      '--lease-ttl-s',
      String(leaseTtlSeconds),
    ],
    { name: `master-${job}` },
  ).then((master) => started.process(master));
}

function startPserver(
  started: Started,
  etcdArgs: string[],
  job: string,
  member: string,
  checkpointDir: string,
): Promise<PserverProcess> {
  return startPserverProcess(
    [...etcdArgs, '--job', job, '--member', member, '--lease-ttl-s', String(leaseTtlSeconds)],
    { name: `pserver-${job}-${member}`, checkpointDir },
  ).then((pserver) => started.process(pserver));
}

/** Waits for the pserver's 'serving' line and checks what its master and itself report. */
async function expectServing(
  master: AppProcess,
  pserver: PserverProcess,
): Promise<{ index: number; epoch: number }> {
  const serving = await pserver.process.waitForLog((e) => e.msg === 'serving', {
    timeoutMs: 30_000,
  });
  const status = await new PserverDriver(pserver.address).status();
  expect(status).toMatchObject({ index: 0, shardCount: 1, shardEpoch: serving.shardEpoch });
  const driver = new MasterDriver(master.address);
  try {
    const view = await waitFor(
      async () => {
        const v = await driver.clusterView();
        return v.shards[0]?.address === pserver.address ? v : undefined;
      },
      { timeoutMs: 30_000, description: 'the master shows the pserver on shard 0' },
    );
    expect(view.shards[0]!.shardEpoch).toBe(status.shardEpoch);
  } finally {
    driver.close();
  }
  return { index: status.index, epoch: status.shardEpoch };
}

/**
 * Starts an app that must fail to start: resolves with its exit status and output, failing the
 * test if it is still running after `timeoutMs`.
 */
async function failedStart(
  app: 'master' | 'pserver',
  args: string[],
  timeoutMs = 30_000,
): Promise<{ status: ExitStatus; output: string; fatal: string }> {
  const extra = app === 'pserver' ? ['--checkpoint-dir', tempDir('checkpoints')] : [];
  const child = spawnNode(
    appBundle(app),
    ['--port', '0', '--log-format', 'json', '--exit-on-stdin-close', ...extra, ...args],
    { name: `${app}-failing`, stdinPipe: true },
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    const status = await Promise.race([
      child.exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(child.failure(`still running after ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
    const fatal = child
      .jsonLines()
      .filter((e) => e.level === 'fatal')
      .map((e) => `${String(e.msg)} ${String((e.err as { message?: string })?.message ?? '')}`)
      .join('\n');
    return { status, output: child.lines.join('\n'), fatal };
  } finally {
    clearTimeout(timer);
    await child.kill();
  }
}

describe('etcd with TLS and client certificates', () => {
  const started = new Started();
  const job = 'tls-job';
  let certs: ClusterCertificates;
  let etcd: EtcdServer;

  beforeAll(async () => {
    certs = generateCertificates();
    etcd = started.etcd = await startEtcd({ tls: { ca: certs.ca, server: certs.server } });
  });

  afterAll(() => started.stop());

  it('a master and a pserver given --etcd-ca, --etcd-cert and --etcd-key: the pserver gets shard 0 and serves', async () => {
    expect(etcd.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const master = await startMaster(started, etcd.clientArgs, job);
    const pserver = await startPserver(started, etcd.clientArgs, job, 'p0', tempDir('ckpt'));
    const { epoch } = await expectServing(master, pserver);
    // What they wrote is in etcd, read over TLS by a client of our own.
    const client = started.client(
      connectEtcd({ endpoints: [etcd.endpoint], security: etcd.security }),
    );
    const state = await readJobState(client, new JobKeys(job));
    expect(state.assignments).toEqual([
      expect.objectContaining({ index: 0, member: 'p0', address: pserver.address, epoch }),
    ]);
  });

  it('a plaintext endpoint to it: exit 1 at once, saying etcd serves TLS', async () => {
    const plaintext = etcd.endpoint.replace('https://', 'http://');
    const { status, fatal } = await failedStart('master', [
      '--etcd-endpoints',
      plaintext,
      '--job',
      job,
    ]);
    expect(status.code).toBe(1);
    expect(fatal).toContain(
      `etcd at ${plaintext} serves TLS: use an https:// endpoint and --etcd-ca`,
    );
  });

  it('no --etcd-ca: exit 1, saying etcd’s certificate is not trusted', async () => {
    const { status, fatal } = await failedStart('pserver', [
      '--etcd-endpoints',
      etcd.endpoint,
      '--job',
      job,
    ]);
    expect(status.code).toBe(1);
    expect(fatal).toContain(
      `etcd's certificate at ${etcd.endpoint} is not signed by a CA this process trusts: give --etcd-ca`,
    );
  });

  it('no client certificate, or one of another CA: exit 1, naming the certificate', async () => {
    const bare = await failedStart('master', [
      '--etcd-endpoints',
      etcd.endpoint,
      '--etcd-ca',
      certs.ca,
      '--job',
      job,
    ]);
    expect(bare.status.code).toBe(1);
    expect(bare.fatal).toContain(
      `etcd at ${etcd.endpoint} refused the connection without a client certificate: give --etcd-cert and --etcd-key`,
    );
    const outsider = await failedStart('pserver', [
      '--etcd-endpoints',
      etcd.endpoint,
      '--etcd-ca',
      certs.ca,
      '--etcd-cert',
      certs.outsider.cert,
      '--etcd-key',
      certs.outsider.key,
      '--job',
      job,
    ]);
    expect(outsider.status.code).toBe(1);
    expect(outsider.fatal).toContain(
      `etcd at ${etcd.endpoint} refused the client certificate --etcd-cert ${certs.outsider.cert}`,
    );
  });
});

describe('etcd with authentication: a user per process, with only its key prefixes', () => {
  const started = new Started();
  const job = 'auth-job';
  const keys = new JobKeys(job);
  const checkpointDir = tempDir('ckpt');
  let certs: ClusterCertificates;
  let etcd: EtcdServer;
  let auth: EtcdAuth;
  let users: Awaited<ReturnType<EtcdAuth['createJobUsers']>>;
  let master: AppProcess;
  let pserver: PserverProcess;

  beforeAll(async () => {
    certs = generateCertificates();
    etcd = started.etcd = await startEtcd({
      tls: { ca: certs.ca, server: certs.server },
      authTokenTtlSeconds: tokenTtlSeconds,
    });
    auth = await EtcdAuth.enable(etcd);
    users = await auth.createJobUsers(job);
  });

  afterAll(() => started.stop());

  it('the master and a pserver with --etcd-user and --etcd-password-file: the pserver gets shard 0 and serves', async () => {
    master = await startMaster(started, users.master.args, job);
    pserver = await startPserver(started, users.pserver.args, job, 'p0', checkpointDir);
    await expectServing(master, pserver);
  });

  it('each user can do only what its role allows', async () => {
    const asPserver = started.client(
      connectEtcd({ endpoints: [etcd.endpoint], security: users.pserver.security }),
    );
    const asMaster = started.client(
      connectEtcd({ endpoints: [etcd.endpoint], security: users.master.security }),
    );
    // Reads it needs; its own registration.
    expect(await asPserver.get(keys.desired).string()).toBe('1');
    expect(await asPserver.get(keys.pserver('p0')).exists()).toBe(true);
    // The desired shard count and the trainers are the master's; other jobs are no one's.
    await expect(asPserver.put(keys.desired).value('5')).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await expect(asPserver.get(keys.trainer(1)).string()).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await expect(asPserver.get(new JobKeys('other-job').desired).string()).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    // Registrations are the pservers': the master reads them only.
    expect(await asMaster.getAll().prefix(keys.pserversPrefix).keys()).toEqual([
      keys.pserver('p0'),
    ]);
    await expect(asMaster.put(keys.pserver('p9')).value('{}')).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    // A change of the shard count: the master reads and deletes the checkpoint metas, writes the
    // record and ends it; a pserver reads the record and marks its share restored.
    await expect(asMaster.getAll().prefix(keys.checkpointRoot).keys()).resolves.toEqual(
      expect.any(Array),
    );
    await asMaster.put(keys.checkpointLatest(9)).value('{}');
    await asMaster.delete().key(keys.checkpointLatest(9));
    // A record of no change (1 to 1, no sources): the master ends it once the mark is there.
    const record = JSON.stringify({ from: 1, to: 1, sources: {} });
    await asMaster.put(keys.reshape).value(record);
    expect(await asPserver.get(keys.reshape).string()).toBe(record);
    await expect(asPserver.put(keys.reshape).value('{"from":1}')).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await asPserver.put(keys.reshapeRestored(0)).value('7');
    await expect(asPserver.put(`${keys.reshape}/other`).value('x')).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    // Its grants are the key and the prefix, not every key that starts with `reshape`.
    await expect(asMaster.put(`${keys.reshape}-other`).value('x')).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await asMaster.delete().prefix(keys.reshapeRestoredPrefix);
    await asMaster.delete().key(keys.reshape);
    // A change asked while the job runs: the master writes the request; a pserver reads it and
    // marks its index handed back, but cannot ask for a change itself. (From a count the job's
    // pservers do not serve at: none of them acts on it.)
    const live = JSON.stringify({ from: 9, to: 10 });
    await asMaster.put(keys.liveReshape).value(live);
    expect(await asPserver.get(keys.liveReshape).string()).toBe(live);
    await expect(asPserver.put(keys.liveReshape).value(live)).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await asPserver.put(keys.handedBack(0)).value('7');
    // The first old primary to decide puts the decision; the running master reads it and rolls
    // the change back, deleting every key of it with its own grants.
    const decision = JSON.stringify({ go: false, reason: 'a receiver did not catch up', index: 0 });
    await asPserver.put(keys.moveDecision).value(decision);
    await master.process.waitForLog(
      (e) => e.level === 'warn' && String(e.msg).includes('from 9 to 10 was rolled back'),
      { timeoutMs: 30_000 },
    );
    for (const key of [keys.moveDecision, keys.handedBack(0), keys.liveReshape])
      expect(await asMaster.get(key).exists()).toBe(false);
    // The reshape transaction's reads, compares and writes are all within the master's role: as
    // a master that does not lead (and a job it takes for down), only its term's compare fails.
    const notLeading = new MasterTerm(asMaster, keys, {
      value: 'm',
      key: `${keys.electionPrefix}nobody`,
      revision: 1,
    });
    const down = { ...(await readJobState(asMaster, keys)), initDone: true, assignments: [] };
    await expect(notLeading.setDesired(2, down)).rejects.toMatchObject({
      code: 'MASTER_NOT_LEADER',
    });
    expect(await asMaster.get(keys.desired).string()).toBe('1');
    // Without a user, the client certificate's CN (server) is no etcd user: nothing at all.
    const anonymous = started.client(
      connectEtcd({ endpoints: [etcd.endpoint], security: etcd.security }),
    );
    await expect(anonymous.get(keys.desired).string()).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
  });

  it('a wrong password: exit 1 within the bound, naming the user and the password file', async () => {
    const wrong = path.join(tempDir('wrong-password'), 'password');
    fs.writeFileSync(wrong, 'not-the-password\n', { mode: 0o600 });
    for (const [app, user] of [
      ['master', users.master],
      ['pserver', users.pserver],
    ] as const) {
      const args = [...etcd.clientArgs, '--etcd-user', user.name, '--etcd-password-file', wrong];
      const { status, fatal } = await failedStart(app, [...args, '--job', job]);
      expect(status.code).toBe(1);
      expect(fatal).toContain(
        `refused user ${user.name} (--etcd-user) with the password in --etcd-password-file ${wrong}`,
      );
    }
  });

  it(`keeps working after its auth tokens expire (--auth-token-ttl ${tokenTtlSeconds}): etcd3 authenticates again`, async () => {
    const { epoch } = await expectServing(master, pserver);
    const expiredBefore = invalidTokens(etcd);
    const masterLinesBefore = master.process.jsonLines().length;
    // Idle but for lease keep-alives (etcd checks no token on those) and the master's relists
    // every 5 s: both processes' tokens expire.
    await sleep(2 * (tokenTtlSeconds + 1) * 1000);

    // The pserver commits a checkpoint: a fenced Txn with a token etcd has dropped.
    const name = 'w';
    const context = { trainerId: 1, shardEpoch: epoch };
    const driver = new PserverDriver(pserver.address);
    await driver.initParam(
      context,
      {
        name,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        content: bytesOf(new Float32Array([1, 2, 3, 4])),
      },
      { sgd: {}, learningRate: { base: 1 } },
    );
    await driver.finishInitParams(context);
    await driver.saveCheckpoint();
    driver.close();
    // The master writes each of its prefixes: trainers/, init/, data/.
    const leader = new MasterDriver(master.address);
    const { trainerId } = await leader.registerTrainer('after-expiry');
    expect(await leader.beginInit(trainerId)).toMatchObject({
      decision: 'INIT_DECISION_INITIALIZE',
    });
    await leader.finishInit(trainerId);
    const data = tempDir('dataset');
    fs.writeFileSync(path.join(data, 'part-0.jsonl'), '{"x":1}\n{"x":2}\n');
    expect(
      await leader.setDataset({ files: { globs: [path.join(data, '*.jsonl')], taskBytes: 1_000 } }),
    ).toMatchObject({ tasks: 1, alreadySet: false });
    const reply = await leader.getTask(trainerId, 0);
    expect(reply.outcome).toBe('GET_TASK_OUTCOME_TASK');
    await leader.taskFinished(trainerId, reply.task!, 2);
    expect(await leader.getTask(trainerId, 0)).toMatchObject({
      outcome: 'GET_TASK_OUTCOME_PASS_OVER',
    });
    leader.close();
    // A graceful stop revokes the pserver's lease (its index frees at once); a spare takes the
    // index and recovers the checkpoint.
    const spare = await startPserver(started, users.pserver.args, job, 'p1', checkpointDir);
    expect(await pserver.process.stop()).toEqual({ code: 75, signal: null });
    const taken = await spare.process.waitForLog((e) => e.msg === 'serving', {
      timeoutMs: 30_000,
    });
    expect(taken).toMatchObject({ index: 0 });
    const stopped = pserver;
    pserver = spare;
    const values = await new PserverDriver(spare.address).getParams(
      { trainerId: 1, shardEpoch: Number(taken.shardEpoch) },
      [name],
    );
    expect(float32s(values.params[0]!.content)).toEqual([1, 2, 3, 4]);

    // etcd did refuse expired tokens meanwhile, and no process noticed more than that.
    expect(invalidTokens(etcd)).toBeGreaterThan(expiredBefore);
    const complaints = [
      ...master.process.jsonLines().slice(masterLinesBefore),
      ...stopped.process.jsonLines(),
      ...spare.process.jsonLines(),
    ].filter((e) => e.level === 'warn' || e.level === 'error');
    expect(complaints).toEqual([]);
  });

  it('users without passwords, known by their client certificate’s CN; adding them disturbs no running job', async () => {
    const other = 'cert-job';
    const byCertificate = await auth.createJobUsers(other, { authenticateBy: 'certificate' });
    expect(byCertificate.master.args).not.toContain('--etcd-user');
    const otherMaster = await startMaster(started, byCertificate.master.args, other);
    const otherPserver = await startPserver(
      started,
      byCertificate.pserver.args,
      other,
      'p0',
      tempDir('ckpt'),
    );
    await expectServing(otherMaster, otherPserver);
    // The certificate user is confined to its own job as well.
    const asOther = started.client(
      connectEtcd({ endpoints: [etcd.endpoint], security: byCertificate.pserver.security }),
    );
    await expect(asOther.get(keys.desired).string()).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    // The first job still serves and commits after the auth store changed under its tokens.
    const { epoch } = await expectServing(master, pserver);
    const driver = new PserverDriver(pserver.address);
    await driver.saveCheckpoint();
    expect((await driver.status()).shardEpoch).toBe(epoch);
    driver.close();
  });
});

/** How many times etcd has refused an expired or unknown simple token so far. */
function invalidTokens(etcd: EtcdServer): number {
  return etcd.process.jsonLines().filter((e) => e.msg === 'invalid auth token').length;
}
