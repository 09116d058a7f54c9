import { connect, type PserverClient } from '@pserver/client';
import { connectEtcd, JobKeys, type EtcdClient } from '@pserver/coordination';
import {
  appBundle,
  LocalCluster,
  metricsPage,
  spawnNode,
  stopAllProcesses,
  waitFor,
  type PserverProcess,
} from '@pserver/testing';

// A job restored onto another shard count: 3 shards hold dense tensors under Adam and two tables
// (one with counting admission and TTL eviction, one with row-wise Adagrad); every pserver is
// stopped (SIGTERM: a final checkpoint each), the job's count changes (`pserverctl shards`), and
// new pservers restore their shares. The digest of the whole job's state (every block with its
// optimizer state, every row with its state, by id) is the same before and after, at 2 and at 5
// shards; then training goes on, and the running job grows to 6 shards live: the same digest.
afterAll(stopAllProcesses);

const ctl = appBundle('pserverctl');

async function run(...args: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawnNode(ctl, args, { name: 'pserverctl' });
  const { code } = await child.exited;
  return { code, stdout: child.lines.join('\n') };
}

const ids = (from: number, count: number): BigInt64Array =>
  BigInt64Array.from({ length: count }, (_, k) => BigInt(from + k) * 7919n);

/** Steps of pushes to every tensor and both tables, some rows new each step. */
async function train(client: PserverClient, steps: number, from: number): Promise<void> {
  for (let s = 0; s < steps; s++)
    await client.step(async (ctx) => {
      const some = ids(from + s * 5, 40);
      await ctx.pushRows('emb', some, new Float32Array(some.length * 4).fill(0.25));
      await ctx.pushRows('rows', some, new Float32Array(some.length * 2).fill(-0.5));
      await ctx.sendGrads({
        w: Float32Array.from({ length: 3000 }, (_, k) => ((k % 7) - 3) / 10),
        b: new Float32Array(16).fill(1),
      });
    });
}

describe('a job restored onto another shard count', () => {
  let etcd: EtcdClient | undefined;
  afterEach(() => etcd?.close());

  it('serves the same state at 2 and at 5 shards, byte for byte, and trains on', async () => {
    const cluster = await LocalCluster.start({ pservers: 3, masters: 1, blockSize: 256 });
    const master = cluster.masterAddresses.join(',');
    const keys = new JobKeys(cluster.options.job);
    etcd = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    const etcdFlags = ['--etcd-endpoints', cluster.etcd.endpoint, '--job', cluster.options.job];
    const digest = async (): Promise<{ digest: string; shards: number; rows: number }> => {
      const out = await run('digest', '--json', ...etcdFlags, cluster.checkpointDir);
      expect(out).toMatchObject({ code: 0 });
      return JSON.parse(out.stdout) as { digest: string; shards: number; rows: number };
    };
    /** Stops every running pserver (each commits a final checkpoint), and waits until none serves. */
    const stopPservers = async (): Promise<void> => {
      for (const pserver of cluster.pservers.filter((p) => p.process.running))
        await pserver.process.stop();
      await waitFor(
        async () => (await etcd!.getAll().prefix(keys.assignPrefix).keys()).length === 0,
        { timeoutMs: 15_000, description: 'no shard assigned' },
      );
    };
    /** Changes the count, starts that many pservers, waits until each restored and the master ended the reshape. */
    const reshapeTo = async (count: number): Promise<void> => {
      // --no-wait: the job is down, and serves at the new count only once the pservers below start.
      const changed = await run('--master', master, 'shards', String(count), '--no-wait');
      expect(changed).toMatchObject({ code: 0 });
      const started: PserverProcess[] = [];
      for (let i = 0; i < count; i++)
        started.push(await cluster.startPserver(['--metrics-port', '0']));
      // Only the new pservers run: each index served is one restored.
      await waitFor(() => (cluster.serving().size === count ? true : undefined), {
        timeoutMs: 60_000,
        description: `${count} shards serving`,
      });
      // Each says what its share cost: bytes read from the old checkpoints, one restore timed.
      for (const pserver of started) {
        const page = await metricsPage(pserver);
        expect(
          Number(/^pserver_reshape_restored_bytes_total (\S+)$/m.exec(page)?.[1]),
        ).toBeGreaterThan(0);
        expect(page).toMatch(/^pserver_reshape_restore_duration_seconds_count 1$/m);
      }
      await waitFor(async () => !(await etcd!.get(keys.reshape).exists()), {
        timeoutMs: 15_000,
        description: 'the reshape ended',
      });
    };

    const trainer = await connect({ master: cluster.masterAddresses, name: 'trainer' });
    try {
      await trainer.initParams(
        { w: new Float32Array(3000).fill(0.5), b: new Float32Array(16) },
        { adam: {}, learningRate: { base: 0.01 } },
        {
          tables: [
            {
              name: 'emb',
              dim: 4,
              buckets: 64,
              initializer: { uniform: { low: -0.1, high: 0.1 }, seed: 3 },
              optimizer: { adagrad: {}, learningRate: { base: 0.1 } },
              admission: { counting: { minCount: 2 } },
              eviction: { ttlSteps: 6 },
            },
            {
              name: 'rows',
              dim: 2,
              buckets: 64,
              initializer: { constant: { value: 1 } },
              optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.2 } },
            },
          ],
        },
      );
      await train(trainer, 12, 0);
    } finally {
      await trainer.close();
    }
    await stopPservers();
    const before = await digest();
    expect(before.shards).toBe(3);
    expect(before.rows).toBeGreaterThan(0);

    for (const count of [2, 5]) {
      await reshapeTo(count);
      await stopPservers();
      const after = await digest();
      expect(after.shards).toBe(count);
      expect(after.digest).toBe(before.digest);
    }

    // Training goes on at 5 shards: a new trainer attaches and steps; its pushes change the state.
    for (let i = 0; i < 5; i++) await cluster.startPserver();
    await waitFor(() => (cluster.serving().size >= 5 ? true : undefined), {
      timeoutMs: 60_000,
      description: '5 shards serving again',
    });
    const next = await connect({ master: cluster.masterAddresses, name: 'next' });
    try {
      await train(next, 4, 1000);
    } finally {
      await next.close();
    }
    await stopPservers();
    const trained = await digest();
    expect(trained.digest).not.toBe(before.digest);

    // Grown while it runs, 5 → 6: the sixth pserver copies its share from the five serving shards,
    // the five keep theirs in memory, and every shard of 6 serves the share it holds — the same
    // state, byte for byte, with nothing read back from checkpoints.
    const running: PserverProcess[] = [];
    for (let i = 0; i < 6; i++) running.push(await cluster.startPserver(['--metrics-port', '0']));
    await waitFor(() => (cluster.serving().size >= 5 ? true : undefined), {
      timeoutMs: 60_000,
      description: '5 shards serving again',
    });
    const grown = await run('--master', master, 'shards', '6');
    expect(grown).toMatchObject({ code: 0 });
    await waitFor(async () => !(await etcd!.get(keys.reshape).exists()), {
      timeoutMs: 30_000,
      description: 'every share of 6 committed',
    });
    const pages = await Promise.all(running.map((pserver) => metricsPage(pserver)));
    const sum = (name: string): number =>
      pages.reduce(
        (total, page) => total + Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(page)?.[1] ?? 0),
        0,
      );
    expect(sum('pserver_moved_shares_total')).toBe(6);
    expect(sum('pserver_reshape_restored_bytes_total')).toBe(0);
    expect(sum('pserver_move_copied_bytes_total')).toBeGreaterThan(0);
    // Without replicas, every receiver holding the job: no shard wrote a final checkpoint.
    expect(sum('pserver_hand_back_duration_seconds_count\\{final_checkpoint="false"\\}')).toBe(5);
    expect(sum('pserver_hand_back_duration_seconds_count\\{final_checkpoint="true"\\}')).toBe(0);
    await stopPservers();
    const live = await digest();
    expect(live.shards).toBe(6);
    expect(live.digest).toBe(trained.digest);
    await cluster.stop();
  }, 300_000);
});
