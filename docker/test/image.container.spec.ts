// The image built from docker/Dockerfile with podman (docker/local), and run: its hygiene, a
// SIGTERM through tini to a final checkpoint, a whole job of containers (etcd, two masters,
// pservers with a replica and a spare, ledger trainers) through a kill -9 of the primary to
// FinishJob, compose.yaml as it is, and the pods of docker/k8s and of its TLS overlay under
// podman kube play. Run as root (`npx nx container docker`); every container is removed at the end.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  bundleScript,
  bytesOf,
  freePort,
  judgeLedger,
  LedgerTrainer,
  MasterDriver,
  parseJsonLine,
  PserverDriver,
  tempDir,
  waitFor,
  waitForSteps,
  workspaceRoot,
  type TrainerProgram,
} from '@pserver/testing';
import { connect } from '@pserver/client';
import { stringify } from 'yaml';
import { kubernetesObjects, makeTlsSecrets, tlsOverlay } from './deployment-files';
import { applyPatches } from './strategic-merge';
import { forKubePlay } from './kube-play';
import {
  localDir,
  podman,
  podmanAsync,
  podmanEnv,
  requireContainerRuntime,
  TestContainers,
} from './podman';

const image = 'localhost/pserver:test';
/**
 * What docker/k8s asks of every pod (the image's uid 1000, a read-only root, no capability, no
 * escalation), on the host's network.
 */
const restricted = [
  '--read-only',
  '--tmpfs=/tmp',
  '--cap-drop=ALL',
  '--security-opt=no-new-privileges',
  '--network=host',
];
const containers = new TestContainers();

/** A directory the image's user (uid 1000) can write, for a checkpoint volume. */
function volumeDir(prefix: string): string {
  const dir = tempDir(prefix);
  fs.chownSync(dir, 1000, 1000);
  return dir;
}

let buildSeconds = 0;
/** The base images base-images.sh made: NODE_IMAGE (the Dockerfile's) and ETCD_IMAGE. */
let base: Record<'NODE_IMAGE' | 'ETCD_IMAGE', string>;

beforeAll(() => {
  requireContainerRuntime();
  const began = Date.now();
  const printed = execFileSync('bash', [path.join(localDir, 'base-images.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  base = Object.fromEntries(
    printed
      .trim()
      .split('\n')
      .map((line) => line.split('=')),
  ) as typeof base;
  execFileSync('bash', [path.join(localDir, 'build-image.sh'), image], { stdio: 'inherit' });
  buildSeconds = (Date.now() - began) / 1000;
}, 900_000);

afterAll(async () => {
  await containers.removeAll();
}, 120_000);

describe('the image of docker/Dockerfile', () => {
  it('is built on a base of Debian and npm packages, and measured', () => {
    const megabytes = Number(podman('image', 'inspect', '--format', '{{.Size}}', image)) / 1e6;
    const baseMegabytes =
      Number(podman('image', 'inspect', '--format', '{{.Size}}', base.NODE_IMAGE)) / 1e6;
    console.log(
      `image ${image}: ${megabytes.toFixed(0)} MB (its Node.js base ${baseMegabytes.toFixed(0)} MB), ` +
        `built in ${buildSeconds.toFixed(0)} s`,
    );
    expect(megabytes).toBeGreaterThan(baseMegabytes);
    expect(podman('image', 'inspect', '--format', '{{.Config.User}}', image)).toBe('1000:1000');
    expect(podman('image', 'inspect', '--format', '{{json .Config.Entrypoint}}', image)).toBe(
      '["/usr/bin/tini","--","node"]',
    );
  });

  it('runs every program as uid 1000 on a read-only root, and holds no compiler nor dev dependency', () => {
    const run = (...command: string[]): string =>
      podman('run', '--rm', ...restricted, image, ...command);
    const { version } = JSON.parse(
      fs.readFileSync(path.join(workspaceRoot(), 'package.json'), 'utf8'),
    ) as { version: string };
    for (const app of ['pserver', 'master', 'pserverctl'])
      expect(run(`dist/apps/${app}/main.js`, '--version')).toContain(version);
    expect(run('dist/tools/ckpt.js', '--version')).toContain(version);
    // The example trainer, an example of the client's public API, has --help.
    expect(run('dist/examples/linear-regression/main.js', '--help')).toContain('--master');
    const shell = (script: string): string =>
      podman('run', '--rm', ...restricted, '--entrypoint', 'sh', image, '-c', script);
    expect(shell('id -u; id -g')).toBe('1000\n1000');
    expect(shell('touch /app/x 2>&1 || echo refused')).toMatch(/Read-only file system/);
    expect(shell('for c in gcc cc c++ make python3; do command -v $c; done; true')).toBe('');
    const modules = shell('ls node_modules node_modules/@nx 2>/dev/null; true').split('\n');
    for (const devOnly of ['jest', 'typescript', 'esbuild', 'nx', 'eslint', 'ts-jest'])
      expect([devOnly, modules.includes(devOnly)]).toEqual([devOnly, false]);
  });

  it('runs tini as PID 1, which passes podman stop (SIGTERM) on: the pserver commits a final checkpoint', async () => {
    const dir = volumeDir('image-stop');
    const port = await freePort();
    const name = containers.start(
      `pserver-stop-${process.pid}`,
      [...restricted, `--volume=${dir}:/checkpoints`],
      image,
      [
        'dist/apps/pserver/main.js',
        `--port=${port}`,
        `--metrics-port=${await freePort()}`,
        '--checkpoint-dir=/checkpoints',
        '--checkpoint-interval-s=3600',
        '--log-format=json',
      ],
    );
    const driver = new PserverDriver(`127.0.0.1:${port}`, { timeoutMs: 5_000 });
    try {
      await waitFor(
        () =>
          driver.status().then(
            () => true,
            () => undefined,
          ),
        {
          timeoutMs: 60_000,
          description: 'the pserver in its container answering',
        },
      );
      expect(podman('exec', name, 'cat', '/proc/1/cmdline').split('\0')[0]).toBe('/usr/bin/tini');
      const context = { trainerId: 1, shardEpoch: Number((await driver.status()).shardEpoch) };
      await driver.initParam(
        context,
        {
          name: 'w',
          elementType: 'ELEMENT_TYPE_FLOAT32',
          content: bytesOf(Float32Array.of(1, 2, 3)),
        },
        { sgd: {}, learningRate: { base: 1 } },
      );
      await driver.finishInitParams(context);
    } finally {
      driver.close();
    }
    await podmanAsync('stop', '--time=60', name);
    expect(containers.state(name)).toMatchObject({ status: 'exited', exitCode: 0 });
    expect(containers.logs(name).join('\n')).toContain('"msg":"stopped"');
    // The checkpoint tool on the host reads what the container committed.
    const inspected = execFileSync(
      process.execPath,
      [path.join(workspaceRoot(), 'dist/tools/ckpt.js'), 'verify', dir],
      { encoding: 'utf8' },
    );
    expect(inspected).toMatch(/\bok\b/i);
  });
});

describe('a job of containers', () => {
  it('trains through a kill -9 of the primary pserver, loses nothing, applies nothing twice, and finishes', async () => {
    const dir = volumeDir('image-job');
    const etcdPort = await freePort();
    const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${await freePort()}`;
    containers.start(
      `etcd-${process.pid}`,
      ['--network=host', '--tmpfs=/var/lib/etcd'],
      base.ETCD_IMAGE,
      [
        'etcd',
        '--data-dir=/var/lib/etcd/job',
        `--listen-client-urls=${etcdEndpoint}`,
        `--advertise-client-urls=${etcdEndpoint}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
      ],
    );
    const common = [
      `--etcd-endpoints=${etcdEndpoint}`,
      '--job=containers',
      '--lease-ttl-s=3',
      '--log-format=json',
    ];
    // A master that lost its lease, or a fenced pserver, exits for its supervisor: here podman's
    // restart policy, as in compose.yaml and the Kubernetes Jobs.
    const supervised = [...restricted, '--restart=on-failure'];
    const masters: string[] = [];
    const masterContainers: string[] = [];
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      masters.push(`127.0.0.1:${port}`);
      masterContainers.push(`master-${i}-${process.pid}`);
      containers.start(masterContainers[i]!, supervised, image, [
        'dist/apps/master/main.js',
        `--port=${port}`,
        `--metrics-port=${await freePort()}`,
        `--advertise-address=127.0.0.1:${port}`,
        '--desired-pservers=1',
        '--replicas=1',
        ...common,
      ]);
    }
    const pservers = new Map<string, string>();
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const name = containers.start(
        `pserver-${i}-${process.pid}`,
        [...supervised, `--volume=${dir}:/checkpoints`],
        image,
        [
          'dist/apps/pserver/main.js',
          `--port=${port}`,
          `--metrics-port=${await freePort()}`,
          `--advertise-address=127.0.0.1:${port}`,
          `--member=pserver-${i}`,
          '--checkpoint-dir=/checkpoints',
          '--checkpoint-interval-s=5',
          ...common,
        ],
      );
      pservers.set(`127.0.0.1:${port}`, name);
    }

    // The ledger's trainers, in containers of the same image: the fixture bundled on the host
    // (npm packages left to the image's node_modules) and mounted read-only.
    const bundle = bundleScript(
      path.join(workspaceRoot(), 'libs/client/test/fixtures/ledger-trainer.ts'),
    );
    const program: TrainerProgram = {
      language: 'typescript (containers)',
      command: 'podman',
      env: { CONTAINERS_CONF: podmanEnv.CONTAINERS_CONF },
      args: [
        'run',
        '--rm',
        '--interactive',
        ...containers.labelled(),
        ...restricted,
        `--volume=${path.dirname(bundle)}:/app/ledger:ro`,
        image,
        `/app/ledger/${path.basename(bundle)}`,
      ],
    };
    const shape = { trainers: 2, capacity: 4_000, ballast: 0 };
    const trainers = [0, 1].map(
      (ordinal) => new LedgerTrainer(program, masters, ordinal, shape, 5),
    );
    let killed: string | undefined;
    try {
      expect(await waitForSteps(trainers, 0, 30, 120_000)).toBe(true);

      // podman kill: podman counts it as stopped by hand (as Docker does) and does not restart
      // it; the replica is promoted and the spare becomes the new replica.
      const first = await replicatedPrimary(masters);
      killed = pservers.get(first)!;
      const killedAt = Date.now();
      await podmanAsync('kill', '--signal=KILL', killed);
      expect(await waitForSteps(trainers, killedAt, 30, 90_000)).toBe(true);
      const second = await replicatedPrimary(masters);
      expect(second).not.toBe(first);
      // The promoted primary's node process dies (kill -9 from the host): a crash, which the
      // restart policy answers by starting the container again (it may take its shard back).
      const crashed = pservers.get(second)!;
      const crashedAt = Date.now();
      const tini = podman('inspect', '--format', '{{.State.Pid}}', crashed);
      execFileSync('pkill', ['-KILL', '--parent', tini]);
      expect(await waitForSteps(trainers, crashedAt, 30, 90_000)).toBe(true);
      await waitFor(
        () => {
          const state = containers.state(crashed);
          return (state.restarts >= 1 && state.status === 'running') || undefined;
        },
        { timeoutMs: 60_000, description: `${crashed} restarted by its restart policy` },
      );

      const exits = await Promise.all(trainers.map((t) => t.finish(60_000)));
      expect(exits).toEqual([
        { code: 0, signal: null },
        { code: 0, signal: null },
      ]);
      const values = await readLedger(masters, shape.trainers * shape.capacity);
      const verdict = judgeLedger({
        ...shape,
        values,
        shardOf: () => 0,
        acks: trainers.flatMap((t) => t.acks),
        errors: trainers.flatMap((t) => t.errors),
        // With a replica, no step is lost to a failover: every zero is counted against the job.
        restores: [],
      });
      console.log(
        `a job of containers: ${verdict.acknowledged} steps acknowledged, ` +
          `${verdict.lost.length + verdict.unexplainedZeros.length} lost, ` +
          `${verdict.doubles.length} applied twice, primary killed (podman kill -s KILL) ` +
          'and the new primary crashed',
      );
      expect(verdict).toMatchObject({ doubles: [], lost: [], unexplainedZeros: [], phantoms: [] });
      expect(verdict.acknowledged).toBeGreaterThanOrEqual(120);
    } finally {
      await Promise.all(trainers.map((t) => t.process.kill()));
    }

    // FinishJob: every pserver commits a final checkpoint and exits 0, then the masters.
    execFileSync(process.execPath, [
      path.join(workspaceRoot(), 'dist/apps/pserverctl/main.js'),
      `--master=${masters.join(',')}`,
      'finish',
    ]);
    const members = [...pservers.values(), ...masterContainers];
    await waitFor(
      () => members.every((name) => containers.state(name).status === 'exited') || undefined,
      { timeoutMs: 90_000, intervalMs: 500, description: 'every pserver and master exited' },
    );
    for (const name of members)
      expect([name, containers.state(name).exitCode]).toEqual([name, name === killed ? 137 : 0]);
    // The image's checkpoint tool checks the volume against the metas in etcd.
    const verified = podman(
      'run',
      '--rm',
      ...restricted,
      `--volume=${dir}:/checkpoints:ro`,
      image,
      'dist/tools/ckpt.js',
      'verify',
      `--etcd-endpoints=${etcdEndpoint}`,
      '--job=containers',
      '/checkpoints',
    );
    console.log(verified);
    expect(verified).toMatch(/\bok\b/i);
  });
});

describe('docker/compose.yaml, as it is, under podman-compose', () => {
  it('runs the job to its end: the trainer finishes it, every pserver and master exits 0', async () => {
    const project = `pserver-test-${process.pid}`;
    const compose = (...args: string[]): string =>
      execFileSync(
        'podman-compose',
        [
          '--project-name',
          project,
          '--file',
          path.join(workspaceRoot(), 'docker/compose.yaml'),
          ...args,
        ],
        {
          encoding: 'utf8',
          env: { ...podmanEnv, PSERVER_IMAGE: image, ETCD_IMAGE: base.ETCD_IMAGE },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
    const name = (service: string): string => `${project}_${service}_1`;
    const servers = ['master-0', 'master-1', 'pserver-0', 'pserver-1', 'pserver-spare'];
    try {
      compose('up', '--detach');
      await waitFor(
        () =>
          [...servers, 'trainer'].every((s) => containers.state(name(s)).status === 'exited') ||
          undefined,
        {
          timeoutMs: 240_000,
          intervalMs: 1_000,
          description: 'the trainer, pservers and masters exited',
        },
      );
      const trainer = containers.logs(name('trainer'));
      expect(containers.state(name('trainer')).exitCode).toBe(0);
      expect(trainer.join('\n')).toContain('asked the job to finish finished=true');
      // The example learns its true weights.
      const done = trainer.find((line) => line.includes(': done '))!;
      expect(done.match(/ weights=(\S+)/)![1]).toBe(done.match(/trueWeights=(\S+)/)![1]);
      for (const service of servers)
        expect([service, containers.state(name(service)).exitCode]).toEqual([service, 0]);
      // Every shard's state is committed by whoever held it: pserver-0 and -1, or the spare where
      // one of them was fenced (a lease lost to a starting etcd's stall) and came back as a spare.
      // The model lives in shard 0, which its holder commits once more on the way out.
      const committed = ['pserver-0', 'pserver-1', 'pserver-spare']
        .flatMap((pserver) => containers.logs(name(pserver)))
        .filter((line) => line.includes('"msg":"checkpoint committed"'));
      const of = (shard: number): string[] =>
        committed.filter((line) => line.includes(`"checkpoint":"shard-${shard}/`));
      expect(of(1)).not.toEqual([]);
      expect(of(0).some((line) => line.includes('"reason":"shutdown"'))).toBe(true);
    } finally {
      compose('down', '--volumes');
      await podmanAsync('network', 'rm', '--force', `${project}_default`).catch(() => undefined);
    }
  });
});

/**
 * The Secrets of make-secrets.sh as the kubelet projects them into a pod of `fsGroup` 1000 with
 * `defaultMode` 0440: a directory per Secret, its keys as files owned by root, group 1000.
 */
function projectedSecrets(): Record<string, string> {
  const dir = tempDir('kube-play-secrets');
  fs.chmodSync(dir, 0o755);
  const { secrets } = makeTlsSecrets(path.join(dir, 'made'));
  const dirs: Record<string, string> = {};
  for (const [name, keys] of secrets) {
    const projected = path.join(dir, name);
    fs.mkdirSync(projected, { mode: 0o755 });
    for (const [key, bytes] of keys) {
      const file = path.join(projected, key);
      fs.writeFileSync(file, bytes, { mode: 0o440 });
      fs.chownSync(file, 0, 1000);
    }
    dirs[name] = projected;
  }
  return dirs;
}

describe.each([
  ['docker/k8s', () => kubernetesObjects(), () => ({}), /^plaintext/],
  [
    'docker/k8s-tls (mutual TLS and roles)',
    () => applyPatches(kubernetesObjects(), tlsOverlay().patches),
    projectedSecrets,
    /^mutual TLS; roles from certificate rules$/,
  ],
])('the pods of %s under podman kube play', (_, manifests, secretDirs, security) => {
  it('run the job of the manifests to its end: etcd ×3, masters ×2, pservers 2 + a spare, trainers ×3', async () => {
    const run = `pserver-test-${process.pid}`;
    const objects = manifests().map(({ object }) => object);
    const etcd = objects.find((o) => o.kind === 'StatefulSet')!.spec.template.spec.containers[0];
    const pods = forKubePlay(objects, {
      images: { pserver: image, [etcd.image]: base.ETCD_IMAGE },
      volumePrefix: `${run}-`,
      secretDirs: secretDirs(),
    });
    const file = path.join(tempDir('kube-play'), 'job.yaml');
    fs.writeFileSync(file, pods.map((pod) => stringify(pod)).join('---\n'));
    const names = (prefix: string, count: number, container: string): string[] =>
      Array.from({ length: count }, (_, i) => `${prefix}-${i}-${container}`);
    const trainers = names('linear-regression', 3, 'trainer');
    const servers = [...names('master', 2, 'master'), ...names('pserver', 3, 'pserver')];
    podman('network', 'create', run);
    try {
      await podmanAsync('kube', 'play', `--network=${run}`, file);
      await waitFor(
        () =>
          [...trainers, ...servers].every((c) => containers.state(c).status === 'exited') ||
          undefined,
        {
          timeoutMs: 240_000,
          intervalMs: 1_000,
          description: 'the trainers, pservers and masters exited',
        },
      );
      for (const name of [...trainers, ...servers])
        expect([name, containers.state(name).exitCode]).toEqual([name, 0]);
      // The last trainer to finish ended the job; each learned the example's true weights.
      for (const trainer of trainers) {
        const done = containers
          .logs(trainer)
          .map(parseJsonLine)
          .find((entry) => entry?.event === 'done')!;
        const [weights, trueWeights] = [done.weights, done.trueWeights] as number[][];
        weights!.forEach((w, i) => expect(w).toBeCloseTo(trueWeights![i]!, 6));
      }
      for (const server of servers) {
        const said = containers
          .logs(server)
          .map((line) => JSON.parse(line) as Record<string, unknown>);
        expect([server, said.find((entry) => entry?.msg === 'security')?.grpc]).toEqual([
          server,
          expect.stringMatching(security),
        ]);
      }
      expect(containers.state('etcd-0-etcd').status).toBe('running');
      const verified = podman(
        'run',
        '--rm',
        ...restricted.filter((option) => option !== '--network=host'),
        `--network=${run}`,
        `--volume=${run}-checkpoints:/checkpoints:ro`,
        image,
        'dist/tools/ckpt.js',
        'verify',
        '--etcd-endpoints=http://etcd-0:2379',
        '--job=example',
        '/checkpoints',
      );
      console.log(verified);
      expect(verified).toMatch(/\bok\b/i);
    } finally {
      await podmanAsync('kube', 'down', file).catch(() => undefined);
      const volumes = podman('volume', 'ls', '--quiet', '--filter', `name=${run}-`);
      if (volumes) podman('volume', 'rm', '--force', ...volumes.split('\n'));
      podman('network', 'rm', '--force', run);
    }
  });
});

/**
 * The address of the pserver serving shard 0 as the leading master tells it, once it has an
 * in-sync replica: a primary's failure loses nothing only then (a replica promoted serves
 * alone until a spare has copied it, and a second failure in that window restores the last
 * checkpoint, as the root README's "What a failure costs" says).
 */
async function replicatedPrimary(masters: string[]): Promise<string> {
  return waitFor(
    async () => {
      for (const address of masters) {
        const driver = new MasterDriver(address);
        try {
          const shard = (await driver.clusterView()).shards[0];
          if (shard?.address && shard.replicas.some((replica) => replica.inSync))
            return shard.address;
        } catch {
          // a follower, or a master restarting: ask the other
        } finally {
          driver.close();
        }
      }
      return undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200, description: 'shard 0 served with a replica in sync' },
  );
}

/** The ledger tensor, read through a client as a trainer would. */
async function readLedger(masters: string[], length: number): Promise<Float32Array> {
  const client = await connect({ master: masters, name: 'ledger-reader' });
  try {
    let values: Float32Array | undefined;
    await client.step(async (ctx) => {
      values = (await ctx.getParams(['ledger'], Float32Array)).ledger;
      await ctx.skip();
    });
    if (values?.length !== length) throw new Error(`the ledger holds ${values?.length} values`);
    return values;
  } finally {
    await client.close();
  }
}
