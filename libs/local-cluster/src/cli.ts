// A local cluster driven over standard input and output, for test runners in other languages
// (pytest, go test): `node dist/libs/local-cluster/cli.js --pservers 2 --spares 1`.
//
// It prints one JSON line when the cluster is up, then answers each command line with one JSON
// line:
//   serving              → {"event":"serving","serving":{"<index>":{"name","address","epoch","pid"}}}
//   kill-serving <index> → kill -9 of the pserver serving <index>; answers (like `serving`) once
//                          another serves it at a higher epoch
//   stop                 → stops every process; {"event":"stopped"}, then exits 0
// An unknown command answers {"event":"error","message":…}. When standard input closes (the
// runner exited, however it exited) or on SIGTERM/SIGINT, it stops everything and exits.
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { LocalCluster } from './local-cluster';
import { waitFor } from './wait-for';

const { values } = parseArgs({
  options: {
    pservers: { type: 'string', default: '2' },
    spares: { type: 'string', default: '1' },
    masters: { type: 'string', default: '1' },
    job: { type: 'string', default: 'conformance' },
    'block-size': { type: 'string' },
    'lease-ttl-s': { type: 'string', default: '2' },
    'session-ttl-s': { type: 'string', default: '4' },
    'log-dir': { type: 'string' },
  },
});

const count = (flag: string, value: string | undefined, min: number): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`--${flag}: expected an integer ≥ ${min}, got '${value}'\n`);
    process.exit(2);
  }
  return n;
};

const reply = (event: Record<string, unknown>): void => {
  process.stdout.write(JSON.stringify(event) + '\n');
};

function servingOf(cluster: LocalCluster): Record<string, object> {
  const serving: Record<string, object> = {};
  for (const [index, { pserver, epoch }] of cluster.serving())
    serving[index] = {
      name: pserver.process.name,
      address: pserver.address,
      epoch,
      pid: pserver.process.pid,
    };
  return serving;
}

async function main(): Promise<void> {
  const cluster = await LocalCluster.start({
    pservers: count('pservers', values.pservers, 1),
    spares: count('spares', values.spares, 0),
    masters: count('masters', values.masters, 1),
    job: values.job,
    leaseTtlSeconds: count('lease-ttl-s', values['lease-ttl-s'], 1),
    sessionTtlSeconds: count('session-ttl-s', values['session-ttl-s'], 1),
    blockSize:
      values['block-size'] === undefined ? undefined : count('block-size', values['block-size'], 1),
    logDir: values['log-dir'],
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= cluster.stop().then(() => {
      reply({ event: 'stopped' });
      process.exit(0);
    }));
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());

  reply({
    event: 'ready',
    etcd: cluster.etcd.endpoint,
    masters: cluster.masterAddresses,
    pservers: cluster.pservers.map((p) => ({
      name: p.process.name,
      address: p.address,
      pid: p.process.pid,
    })),
    serving: servingOf(cluster),
    checkpointDir: cluster.checkpointDir,
  });

  // One command at a time, in order.
  let queue = Promise.resolve();
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    queue = queue.then(() => run(cluster, line.trim().split(/\s+/), stop));
  });
  lines.on('close', () => void queue.then(stop));
}

async function run(cluster: LocalCluster, [command, arg]: string[], stop: () => Promise<void>) {
  try {
    switch (command) {
      case 'serving':
        return reply({ event: 'serving', serving: servingOf(cluster) });
      case 'kill-serving': {
        const index = Number(arg);
        const before = cluster.serving().get(index);
        if (!before) throw new Error(`no pserver serves index '${arg}'`);
        await before.pserver.process.kill();
        await waitFor(
          () => {
            const now = cluster.serving().get(index);
            return now && now.epoch > before.epoch ? now : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 25, description: `index ${index} served again` },
        );
        return reply({ event: 'serving', serving: servingOf(cluster) });
      }
      case 'stop':
        return await stop();
      case '':
        return undefined;
      default:
        throw new Error(`unknown command '${command}' (serving, kill-serving <index>, stop)`);
    }
  } catch (err) {
    reply({ event: 'error', message: err instanceof Error ? err.message : String(err) });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`local-cluster: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
