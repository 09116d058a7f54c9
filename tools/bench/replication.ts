/**
 * What a replica costs and what it buys, measured in one run on a local job (real etcd, one
 * master, one shard): push throughput and latency with `--replicas 0` and `--replicas 1`, in
 * alternating rounds on fresh clusters, and the takeover time of a kill -9 of the primary — kill
 * to the view serving the shard again, and to the next acknowledged push — for each. Pushes are
 * `clients` trainers in this process, each stepping as fast as acknowledgements come, with
 * gradients of `small` (latency-bound) and `large` (bandwidth-bound) bytes; plain SGD.
 *
 *   npx nx run tools:bench-replication
 */
import { connect, type PserverClient as Client } from '@pserver/client';
import { LocalCluster, sleep, waitFor } from '@pserver/local-cluster';

const leaseTtlSeconds = 2;
const phaseMs = 8_000;
const rounds = Number(process.env.ROUNDS ?? 3);
const clients = 4;
const sizes = { small: 256, large: 1 << 20 } as const; // float32 elements: 1 KiB and 4 MiB

interface PushFigures {
  pushesPerSecond: number;
  mibPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

async function startJob(replicas: number): Promise<LocalCluster> {
  return LocalCluster.start({
    pservers: 1,
    spares: 1 + replicas,
    replicas,
    masters: 1,
    leaseTtlSeconds,
    sessionTtlSeconds: 4,
    blockSize: 1 << 22,
    extraPserverArgs: ['--checkpoint-interval-s', '5', '--max-message-mb', '64'],
  });
}

/** Every tensor of the run, declared (the first call of the job initializes them). */
async function declare(client: Client): Promise<void> {
  await client.initParams(
    Object.fromEntries(Object.values(sizes).map((n) => [`w${n}`, new Float32Array(n)])),
    { sgd: {}, learningRate: { base: 0.001 } },
  );
}

async function trainers(cluster: LocalCluster): Promise<Client[]> {
  const all = await Promise.all(
    Array.from({ length: clients }, (_, k) =>
      connect({ master: cluster.masterAddresses, name: `bench-${k}` }),
    ),
  );
  for (const client of all) await declare(client);
  return all;
}

/** Every client pushes as fast as it can for `phaseMs`. */
async function pushPhase(all: Client[], elements: number): Promise<PushFigures> {
  const name = `w${elements}`;
  const gradient = new Float32Array(elements).fill(1);
  const latencies: number[] = [];
  const until = performance.now() + phaseMs;
  const started = performance.now();
  await Promise.all(
    all.map(async (client) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        await client.step((ctx) => ctx.sendGrads({ [name]: gradient }));
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return {
    pushesPerSecond: latencies.length / seconds,
    mibPerSecond: (latencies.length * elements * 4) / seconds / (1 << 20),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
  };
}

/** kill -9 of the primary: ms to the view serving the shard again, and to the next push acked. */
async function takeover(cluster: LocalCluster, client: Client, elements: number) {
  const name = `w${elements}`;
  const before = cluster.serving().get(0)!;
  const pushing = (async () => {
    for (;;) await client.step((ctx) => ctx.sendGrads({ [name]: new Float32Array(elements) }));
  })();
  await sleep(500);
  const killedAt = performance.now();
  await before.pserver.process.kill();
  const served = await waitFor(
    () => {
      const now = cluster.serving().get(0);
      return now && now.epoch > before.epoch ? now : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 5, description: 'the shard served again' },
  );
  const servingMs = performance.now() - killedAt;
  await client.step((ctx) => ctx.sendGrads({ [name]: new Float32Array(elements) }));
  const pushMs = performance.now() - killedAt;
  void pushing.catch(() => undefined);
  const promoted = served.pserver.process.lastLog('serving')?.promoted !== undefined;
  return { servingMs, pushMs, promoted };
}

async function main(): Promise<void> {
  const results: Record<string, PushFigures[]> = {};
  const takeovers: Record<number, { servingMs: number; pushMs: number; promoted: boolean }[]> = {
    0: [],
    1: [],
  };
  for (let round = 0; round < rounds; round++) {
    for (const replicas of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const cluster = await startJob(replicas);
      try {
        await cluster.waitUntilServed();
        if (replicas > 0)
          await waitFor(
            () =>
              cluster.pservers.some((p) =>
                p.process.lastLog('in sync with the primary: promotable'),
              ),
            { timeoutMs: 60_000, description: 'a replica in sync' },
          ).catch(() => undefined);
        for (const [label, elements] of Object.entries(sizes)) {
          const all = await trainers(cluster);
          try {
            if (replicas > 0)
              await waitFor(
                () =>
                  cluster.pservers.some((p) =>
                    p.process.lastLog('in sync with the primary: promotable'),
                  ),
                { timeoutMs: 60_000, description: 'a replica in sync' },
              );
            (results[`${label}/${replicas}`] ??= []).push(await pushPhase(all, elements));
          } finally {
            await Promise.all(all.map((c) => c.close()));
          }
        }
        const client = await connect({ master: cluster.masterAddresses, name: 'bench-takeover' });
        try {
          await declare(client);
          takeovers[replicas]!.push(await takeover(cluster, client, sizes.small));
        } finally {
          await client.close().catch(() => undefined);
        }
      } finally {
        await cluster.stop();
      }
    }
  }
  const median = (values: number[]): number =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(
    `\npushes from ${clients} trainers, ${phaseMs / 1000} s phases, ${rounds} rounds (medians):`,
  );
  for (const label of Object.keys(sizes)) {
    const zero = results[`${label}/0`]!;
    const one = results[`${label}/1`]!;
    const row = (r: PushFigures[]) =>
      `${median(r.map((x) => x.pushesPerSecond)).toFixed(0)} pushes/s, ${median(r.map((x) => x.mibPerSecond)).toFixed(1)} MiB/s, p50 ${median(r.map((x) => x.p50Ms)).toFixed(1)} ms, p99 ${median(r.map((x) => x.p99Ms)).toFixed(1)} ms`;
    console.log(
      `  ${label} (${sizes[label as keyof typeof sizes] * 4} B): replicas 0: ${row(zero)}`,
    );
    console.log(`  ${label}: replicas 1: ${row(one)}`);
    console.log(
      `  ${label}: throughput with 1 replica / with 0: ${(median(one.map((x) => x.pushesPerSecond)) / median(zero.map((x) => x.pushesPerSecond))).toFixed(2)}×`,
    );
  }
  console.log(`takeover after kill -9 of the primary (lease TTL ${leaseTtlSeconds} s):`);
  for (const replicas of [0, 1]) {
    const t = takeovers[replicas]!;
    console.log(
      `  replicas ${replicas}: serving again after ${t.map((x) => (x.servingMs / 1000).toFixed(2)).join(', ')} s; ` +
        `next push acknowledged after ${t.map((x) => (x.pushMs / 1000).toFixed(2)).join(', ')} s; ` +
        `${t.filter((x) => x.promoted).length} of ${t.length} by promotion`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
