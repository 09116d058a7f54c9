import {
  appBundle,
  LocalCluster,
  spawnNode,
  stopAllProcesses,
  tempDir,
  waitFor,
  workspaceRoot,
} from '@pserver/testing';
import { connect } from '@pserver/client';
import fs from 'node:fs';
import path from 'node:path';

// pserverctl against a real cluster (etcd, a master, two pservers and a spare): status while a
// pserver is killed and its spare takes over (recovering → serving), a checkpoint of every
// shard (verified, exported and digested), the shard count of an initialized job refused while
// it runs with too few pservers and changed once it is down (a reshape, in status), a running
// job grown from 2 to 3 shards (and once with a receiver that never catches up: its lag in
// status), a drain that hands a shard to a spare while a trainer pushes (no acknowledged push
// lost), every command with --json.
afterAll(stopAllProcesses);

const ctl = appBundle('pserverctl');

/** Runs pserverctl to its end: its exit code and output. */
async function run(
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnNode(ctl, args, { name: `pserverctl-${args[0]}` });
  const status = await child.exited;
  return { code: status.code, stdout: child.lines.join('\n'), stderr: '' };
}

interface Status {
  job: string;
  healthy: boolean;
  masters: { address: string; role: string }[];
  shards: {
    index: number;
    state: string;
    member: string;
    epoch: number;
    checkpointAgeSeconds?: number;
    moves?: {
      member: string;
      index: number;
      state: string;
      lagPushes: number;
      sentBytes: number;
    }[];
  }[];
  spares: { member: string }[];
  trainers: { name: string }[];
}

/**
 * A trainer that pushes a gradient of −1 to every element of `w` (SGD at rate 1) step after step
 * from `start` to `stop`: every element then counts the pushes applied, `acknowledged` those the
 * trainer was told of.
 */
async function countingTrainer(masters: string[], name: string) {
  const trainer = await connect({ master: masters, name });
  const size = 4096;
  await trainer.initParams({ w: new Float32Array(size) }, { sgd: {}, learningRate: { base: 1 } });
  let pushing = true;
  let pushes: Promise<void> = Promise.resolve();
  const counting = {
    acknowledged: 0,
    start(): void {
      pushes = (async () => {
        while (pushing) {
          await trainer.step(async (ctx) => {
            await ctx.sendGrads({ w: new Float32Array(size).fill(-1) });
          });
          counting.acknowledged++;
        }
      })();
    },
    /** Waits for `count` more acknowledged pushes. */
    async more(count: number, description: string): Promise<void> {
      const from = counting.acknowledged;
      await waitFor(() => counting.acknowledged >= from + count, {
        timeoutMs: 30_000,
        description,
      });
    },
    /** Stops pushing; the values of `w` as the shards hold them. */
    async stop(): Promise<Set<number>> {
      pushing = false;
      await pushes;
      return new Set((await trainer.getParams(['w'], Float32Array)).w);
    },
    async close(): Promise<void> {
      pushing = false;
      await pushes.catch(() => undefined);
      await trainer.close();
    },
  };
  return counting;
}

describe('pserverctl', () => {
  it('shows a job, follows a failover from recovering to serving, checkpoints every shard', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      spares: 0,
      masters: 1,
      // Long enough for the spare, stopped below, to keep its lease until the test lets it go on.
      leaseTtlSeconds: 6,
    });
    // The spare stops itself between recovering a shard and serving it (its failpoint), so that
    // status shows the shard recovering until the test lets it go on.
    const spare = await cluster.startPserver(['--failpoint', 'after-recovery:stop']);
    const master = cluster.masterAddresses.join(',');
    const trainer = await connect({ master: cluster.masterAddresses, name: 'ctl-trainer' });
    try {
      await trainer.initParams(
        { w: new Float32Array(4096) },
        { sgd: {}, learningRate: { base: 0.1 } },
      );
      const healthy = await run('--master', master, 'status', '--json');
      expect(healthy.code).toBe(0);
      const before = JSON.parse(healthy.stdout) as Status;
      expect(before).toMatchObject({ healthy: true, masters: [{ role: 'leader' }] });
      expect(before.shards.map((s) => s.state)).toEqual(['serving', 'serving']);
      expect(before.shards.every((s) => (s.checkpointAgeSeconds ?? Infinity) < 60)).toBe(true);
      expect(before.trainers.map((t) => t.name)).toEqual(['ctl-trainer']);

      const text = await run('--master', master, 'status');
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/^shard +state +member +address +epoch +checkpoint/m);
      console.log(`pserverctl status:\n${text.stdout}`);

      // Kill shard 1's pserver: the spare takes the shard over; status says so on the way.
      const victim = cluster.pserverServing(1);
      await victim.process.kill();
      const seen: string[] = [];
      const observe = async (want: string): Promise<Status> =>
        waitFor(
          async () => {
            // A stopped pserver answers nothing: a short deadline for its status.
            const { code, stdout } = await run(
              ...['--master', master, '--timeout-ms', '500', 'status', '--json'],
            );
            const status = JSON.parse(stdout) as Status;
            const shard = status.shards[1]!;
            const state = `${shard.state} (${shard.member || 'nobody'})`;
            if (seen.at(-1) !== state) seen.push(state);
            // Degraded until the spare serves: exit code 3.
            expect(code).toBe(status.healthy ? 0 : 3);
            return shard.state === want && shard.member === 'pserver-2' ? status : undefined;
          },
          { timeoutMs: 60_000, description: `shard 1 ${want} on the spare` },
        );
      // The spare recovered the shard and stopped before announcing it serves: recovering.
      await spare.process.waitForLog((e) => e.msg === 'failpoint: stopping the process', {
        timeoutMs: 60_000,
      });
      await observe('recovering');
      spare.process.signal('SIGCONT');
      const after = await observe('serving').catch((err: unknown) => {
        throw new Error(
          `${(err as Error).message}; shard 1 was: ${seen.join(' → ')}; the spare said: ${spare.process
            .jsonLines()
            .map((l) => l.msg)
            .join(' | ')}`,
        );
      });
      expect(after.shards[1]!.epoch).toBeGreaterThan(before.shards[1]!.epoch);
      console.log(`shard 1 through the failover: ${seen.join(' → ')}`);

      const checkpoint = await run('--master', master, 'checkpoint', '--json');
      expect(checkpoint.code).toBe(0);
      const committed = JSON.parse(checkpoint.stdout) as {
        index: number;
        path: string;
        bytes: number;
      }[];
      expect(committed.map((c) => c.index)).toEqual([0, 1]);
      // Each a new committed file (a delta when little changed since the last one).
      for (const c of committed)
        expect(c).toEqual({ index: c.index, path: expect.any(String), bytes: expect.any(Number) });
      expect(committed.every((c) => c.bytes > 0)).toBe(true);

      // The checkpoint tool's verify and export, through pserverctl, on the cluster job's metas.
      const etcd = ['--etcd-endpoints', cluster.etcd.endpoint, '--job', cluster.options.job];
      const verified = await run('verify', ...etcd, cluster.checkpointDir);
      expect(verified.code).toBe(0);
      expect(verified.stdout).toMatch(/^shard 1 of 2 /m);
      const out = path.join(tempDir('pserverctl-export'), 'job.safetensors');
      expect((await run('export', ...etcd, '--out', out, cluster.checkpointDir)).code).toBe(0);
      const bytes = fs.readFileSync(out);
      const header = JSON.parse(
        bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8'),
      ) as Record<string, { dtype: string; shape: number[] }>;
      expect(header.w).toMatchObject({ dtype: 'F32', shape: [4096] });
      // The digest of the job's state, as one JSON document with --json (pserverctl's own flag).
      const digested = await run('digest', '--json', ...etcd, cluster.checkpointDir);
      expect(digested.code).toBe(0);
      const digest = JSON.parse(digested.stdout) as { digest: string };
      expect(digest).toMatchObject({
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
        shards: 2,
        tensors: 1,
        elements: 4096,
        tables: [],
        rows: 0,
      });
      const digestText = await run('digest', ...etcd, cluster.checkpointDir);
      expect(digestText.code).toBe(0);
      expect(digestText.stdout).toContain(`digest ${digest.digest}\n2 shards, 1 tensors`);

      // A running job with fewer pservers than the new count would stop training: refused
      // (exit code 1), saying how many more it needs.
      const shards = await run('--master', master, 'shards', '3');
      expect(shards.code).toBe(1);
      expect(shards.stdout).toContain('the job has 2 pservers and 3 shards need 3: start 1 more');

      const top = await run(
        '--master',
        master,
        '--json',
        'top',
        '--count',
        '2',
        '--interval-s',
        '1',
      );
      expect(top.code).toBe(0);
      expect(top.stdout.split('\n').map((line) => (JSON.parse(line) as Status).healthy)).toEqual([
        true,
        true,
      ]);

      // Stopped (each commits a final checkpoint and frees its index), the job takes a new count:
      // a reshape, pending until the new indices restore their shares.
      for (const pserver of [...cluster.pservers]) await pserver.process.stop();
      const down = await waitFor(
        async () => {
          const status = await run('--master', master, '--json', 'status');
          const shards = (JSON.parse(status.stdout) as Status).shards;
          return shards.every((s) => s.state === 'unassigned') ? shards : undefined;
        },
        { timeoutMs: 15_000, description: 'no shard assigned' },
      );
      expect(down).toHaveLength(2);
      const reshaped = await run('--master', master, 'shards', '3', '--no-wait');
      expect(reshaped.code).toBe(0);
      expect(reshaped.stdout).toContain("the job's shard count is set to 3 (was 2)");
      expect(reshaped.stdout).toContain('start 3 pservers');
      const pending = await run('--master', master, 'status');
      expect(pending.code).toBe(3);
      expect(pending.stdout).toContain(
        'reshape 2 → 3 pending: restored none; waiting for 0, 1, 2 (from the checkpoints of old indices 0, 1)',
      );
    } finally {
      await trainer.close();
      await cluster.stop();
    }
  }, 120_000);

  it('grows a running job from 2 to 3 shards while a trainer pushes, and waits until it serves at 3; no acknowledged push is lost', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      spares: 1,
      masters: 1,
      blockSize: 512,
    });
    const master = cluster.masterAddresses.join(',');
    const trainer = await countingTrainer(cluster.masterAddresses, 'grow-trainer');
    try {
      trainer.start();
      await trainer.more(20, '20 pushes');
      const grown = await run('--master', master, 'shards', '3');
      expect(grown.code).toBe(0);
      expect(grown.stdout).toContain("the job's shard count is set to 3 (was 2)");
      expect(grown.stdout).toContain(
        'the primaries refuse pushes together and hand their shards back',
      );
      // Who receives what, as the change began.
      expect(grown.stdout).toContain('  receivers, copying while the old shards serve: ');
      expect(grown.stdout).toMatch(
        /the job serves at 3 shards, [\d.]+ s after the change was asked/,
      );
      const status = JSON.parse(
        (await run('--master', master, '--json', 'status')).stdout,
      ) as Status;
      expect(status.healthy).toBe(true);
      expect(status.shards.map((s) => s.state)).toEqual(['serving', 'serving', 'serving']);
      await trainer.more(20, '20 more pushes at 3 shards');
      // Every element of the three shards holds exactly the acknowledged pushes.
      expect(await trainer.stop()).toEqual(new Set([trainer.acknowledged]));
      console.log(`grow: ${grown.stdout.trim()}; ${trainer.acknowledged} pushes, all applied once`);
    } finally {
      await trainer.close();
      await cluster.stop();
    }
  }, 120_000);

  it('shows a receiver of a live move that never catches up, behind by its lag; the change is rolled back, the job serves on at 2, nothing lost, and a change asked again is refused the same way', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      spares: 0,
      masters: 1,
      blockSize: 512,
      // The old primaries give a receiver this long to copy and catch up.
      extraPserverArgs: ['--move-ready-timeout-s', '8'],
    });
    const master = cluster.masterAddresses.join(',');
    const trainer = await countingTrainer(cluster.masterAddresses, 'stuck-trainer');
    const status = async (): Promise<Status> =>
      JSON.parse((await run('--master', master, '--json', 'status')).stdout) as Status;
    try {
      trainer.start();
      // The third pserver loads its copies but applies none of the pushes forwarded after them.
      const stuck = await cluster.startPserver(['--failpoint', 'forward:stall']);
      await waitFor(async () => (await status()).spares.length === 1 || undefined, {
        timeoutMs: 30_000,
        description: 'the stalling pserver waits as a spare',
      });
      const asked = await run('--master', master, 'shards', '3', '--no-wait');
      expect(asked.code).toBe(0);
      // The stalling pserver falls behind (the old primaries also receive slices of each other).
      let text = '';
      const behind = await waitFor(
        async () => {
          const moves = (await status()).shards.flatMap((s) => s.moves ?? []);
          const lagging = moves.filter(
            (m) => m.member === stuck.process.name && m.state === 'catching up' && m.lagPushes > 0,
          );
          if (lagging.length === 0) return undefined;
          text = (await run('--master', master, 'status')).stdout;
          return lagging;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: 'a receiver behind in status' },
      );
      expect(behind.every((m) => m.sentBytes > 0)).toBe(true);
      expect(text).toContain('live moves, copied while the old shards serve:');
      expect(text).toMatch(
        new RegExp(`→ index 2 of 3: ${stuck.process.name}, \\d+ K?i?B of \\d+ K?i?B sent`),
      );
      console.log(text);
      // Past the bound both old primaries roll the change back, and no shard refused a push: the
      // job serves on at 2.
      const rolledBack = await waitFor(
        () => {
          const lines = cluster.pservers.flatMap((p) =>
            p.process
              .jsonLines()
              .filter(
                (l) =>
                  typeof l.msg === 'string' &&
                  l.msg.startsWith('rolled the change of the shard count to 3 back'),
              ),
          );
          return lines.length >= 2 ? lines : undefined;
        },
        { timeoutMs: 60_000, description: 'both old primaries rolling the change back' },
      );
      await waitFor(
        async () => {
          const now = await status();
          return (
            (now.healthy && now.shards.length === 2 && !now.shards.some((s) => s.moves)) ||
            undefined
          );
        },
        { timeoutMs: 30_000, description: 'the job serving on at 2 shards' },
      );
      // One decided first, naming the receiver; the other followed it (or found it carried out).
      expect(rolledBack).toHaveLength(2);
      expect(rolledBack.some((line) => (line.msg as string).includes(stuck.process.name))).toBe(
        true,
      );
      expect(
        cluster.pservers.some((p) =>
          p.process.jsonLines().some((l) => l.msg === 'handed the shard back'),
        ),
      ).toBe(false);
      const master0 = cluster.masters[0]!.process;
      await waitFor(
        () =>
          master0
            .jsonLines()
            .find(
              (l) =>
                typeof l.msg === 'string' &&
                l.msg.startsWith('the change of the shard count from 2 to 3 was rolled back'),
            ),
        { timeoutMs: 10_000, description: 'the leader ends the change' },
      );
      await trainer.more(20, '20 more pushes at 2 shards');
      // Asked again, and waited for, the change is refused the same way, and said so.
      const again = await run('--master', master, 'shards', '3');
      expect(again.code).not.toBe(0);
      expect(again.stdout).toContain('the change to 3 shards was rolled back');
      await trainer.more(20, '20 more pushes at 2 shards');
      expect(await trainer.stop()).toEqual(new Set([trainer.acknowledged]));
      console.log(
        `stuck receiver: ${behind.map((m) => `${m.member} ${m.state}, lag ${m.lagPushes}`).join('; ')}; rolled back twice; ${trainer.acknowledged} pushes, all applied once`,
      );
    } finally {
      await trainer.close();
      await cluster.stop();
    }
  }, 150_000);

  it('drains a pserver: a spare serves its shard, the drained one exits, no acknowledged push is lost', async () => {
    // Blocks of 512 elements: the tensor below spreads over both shards.
    const cluster = await LocalCluster.start({
      pservers: 2,
      spares: 1,
      masters: 1,
      blockSize: 512,
    });
    const master = cluster.masterAddresses.join(',');
    const trainer = await connect({ master: cluster.masterAddresses, name: 'drain-trainer' });
    let pushing = true;
    let pushes: Promise<void> = Promise.resolve();
    try {
      // SGD at rate 1 with a gradient of −1 everywhere: every element counts the pushes applied.
      const size = 4096;
      await trainer.initParams(
        { w: new Float32Array(size) },
        { sgd: {}, learningRate: { base: 1 } },
      );
      let acknowledged = 0;
      pushes = (async () => {
        while (pushing) {
          await trainer.step(async (ctx) => {
            await ctx.sendGrads({ w: new Float32Array(size).fill(-1) });
          });
          acknowledged++;
        }
      })();
      await waitFor(() => acknowledged >= 20, { timeoutMs: 30_000, description: '20 pushes' });

      const status = JSON.parse(
        (await run('--master', master, 'status', '--json')).stdout,
      ) as Status & {
        spares: { member: string }[];
      };
      expect(status.spares.map((s) => s.member)).toEqual(['pserver-2']);
      const victim = cluster.pserverServing(1);
      const drained = await run('--master', master, '--json', 'drain', status.shards[1]!.member);
      expect(drained.code).toBe(0);
      const result = JSON.parse(drained.stdout) as {
        role: string;
        index: number;
        epoch: number;
        successor: { member: string; epoch: number };
      };
      expect(result).toMatchObject({
        role: 'primary',
        index: 1,
        successor: { member: 'pserver-2' },
      });
      expect(result.successor.epoch).toBeGreaterThan(result.epoch);
      // Stopped before the job's end: 75, which a supervisor answers with a new pserver.
      expect((await victim.process.exited).code).toBe(75);
      // It committed a final checkpoint before it let the shard go.
      const final = victim.process
        .jsonLines()
        .filter((l) => l.msg === 'checkpoint committed' && l.reason === 'shutdown');
      expect(final).toHaveLength(1);

      const atDrain = acknowledged;
      await waitFor(() => acknowledged >= atDrain + 20, {
        timeoutMs: 30_000,
        description: '20 more pushes after the drain',
      });
      pushing = false;
      await pushes;
      // Every element of both shards holds exactly the acknowledged pushes: none lost, none twice.
      const { w } = await trainer.getParams(['w'], Float32Array);
      expect(new Set(w)).toEqual(new Set([acknowledged]));
      console.log(`drain: ${drained.stdout.trim()}; ${acknowledged} pushes, all applied once`);

      // Nothing left to take shard 0 over: refused without --force; an unknown member: exit 1.
      const refused = await run('--master', master, 'drain', status.shards[0]!.member);
      expect(refused.code).toBe(1);
      expect((await run('--master', master, 'drain', 'nobody')).code).toBe(1);
    } finally {
      pushing = false;
      await pushes.catch(() => undefined);
      await trainer.close();
      await cluster.stop();
    }
  }, 120_000);

  it('says what it cannot reach, and exits 2 on bad usage', async () => {
    const unreachable = await run(
      '--master',
      '127.0.0.1:1',
      '--timeout-ms',
      '500',
      'status',
      '--json',
    );
    expect(unreachable.code).toBe(3);
    expect(JSON.parse(unreachable.stdout)).toMatchObject({
      healthy: false,
      masters: [{ address: '127.0.0.1:1', role: 'unreachable' }],
    });
    expect((await run('status')).code).toBe(2);
    expect((await run('--master', 'x:1', 'shards', 'many')).code).toBe(2);
    const version = await run('--version');
    const { version: projectVersion } = JSON.parse(
      fs.readFileSync(path.join(workspaceRoot(), 'package.json'), 'utf8'),
    ) as { version: string };
    expect(version).toMatchObject({
      code: 0,
      stdout: `pserverctl ${projectVersion} (node ${process.version})`,
    });
  });
});
