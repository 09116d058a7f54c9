import { checkHealth, serviceNames } from '@pserver/rpc';
import {
  MasterDriver,
  sleep,
  startEtcd,
  startMasterProcess,
  stopAllProcesses,
  waitFor,
  type AppProcess,
  type EtcdServer,
} from '@pserver/testing';

// TTL 2 s: each master trusts its election lease for 1.33 s after a keep-alive was sent, so an
// etcd outage of 3 s costs every master its lease. Bounds are generous: they only catch hangs.
const ttlSeconds = 2;

afterAll(async () => {
  await stopAllProcesses();
});

let job = 0;

/** Two master replicas of a new job; the first one started leads. */
async function twoMasters(
  etcd: EtcdServer,
  leaseTtlSeconds = ttlSeconds,
): Promise<{ leader: AppProcess; follower: AppProcess }> {
  const args = [
    ...etcd.clientArgs,
    '--job',
    `lease-loss-${process.pid}-${++job}`,
    '--lease-ttl-s',
    String(leaseTtlSeconds),
  ];
  const leader = await startMasterProcess(args, { name: 'master-a' });
  await leader.process.waitForLog((e) => e.msg === 'leading', { timeoutMs: 20_000 });
  const follower = await startMasterProcess(args, { name: 'master-b' });
  return { leader, follower };
}

/** Whether the replica answers as the leader (a follower refuses with MASTER_NOT_LEADER). */
async function leads(master: AppProcess): Promise<boolean> {
  const driver = new MasterDriver(master.address, 2_000);
  try {
    await driver.clusterView();
    return true;
  } catch {
    return false;
  } finally {
    driver.close();
  }
}

const logged = (master: AppProcess, msg: string): number =>
  master.process.jsonLines().filter((e) => e.msg === msg).length;

describe('a master losing its election lease', () => {
  let etcd: EtcdServer;

  beforeEach(async () => {
    etcd = await startEtcd();
  });

  afterEach(async () => {
    await stopAllProcesses();
    await etcd?.stop();
  });

  it('etcd paused past the lease: the leader steps down and exits 4, the follower stays up, re-grants and leads', async () => {
    const { leader, follower } = await twoMasters(etcd);
    expect(await leads(follower)).toBe(false);
    expect(await checkHealth(leader.address, serviceNames.master)).toBe('SERVING');

    etcd.process.signal('SIGSTOP');
    const pausedAt = performance.now();
    try {
      // By its lease's local deadline (1.33 s after its last keep-alive was sent), the leader
      // stops leading — health says so at once — and then exits, while etcd still answers nothing.
      await leader.process.waitForLog(
        (e) => e.msg === 'the election lease can no longer be trusted; stepping down',
        { timeoutMs: 10_000 },
      );
      const steppedDownMs = performance.now() - pausedAt;
      expect(steppedDownMs).toBeLessThan(ttlSeconds * 1000);
      expect(await checkHealth(leader.address, serviceNames.master)).toBe('NOT_SERVING');
      expect(await leader.process.exited).toEqual({ code: 4, signal: null });
      console.log(
        `leader stepped down ${Math.round(steppedDownMs)} ms and exited ` +
          `${Math.round(performance.now() - pausedAt)} ms into the pause`,
      );
      await follower.process.waitForLog(
        (e) => e.msg === 'the election lease was lost while a candidate',
        { timeoutMs: 10_000 },
      );
      expect(follower.process.running).toBe(true);
      await sleep(Math.max(0, 3_000 - (performance.now() - pausedAt)));
    } finally {
      etcd.process.signal('SIGCONT');
    }
    const resumedAt = performance.now();

    await waitFor(() => leads(follower).then((yes) => yes || undefined), {
      timeoutMs: 30_000,
      intervalMs: 50,
      description: 'the follower leads',
    });
    const ledAfterMs = performance.now() - resumedAt;
    console.log(`follower leads ${Math.round(ledAfterMs)} ms after etcd resumed`);
    // The old leader's lease is past its TTL when etcd resumes (revoked within 0.5 s) and the
    // follower's next grant follows within its 2 s backoff: under the 5 s for which etcd3 would
    // refuse to call a host that had failed, were that not shortened (`connectEtcd`).
    expect(ledAfterMs).toBeLessThan(4_000);
    expect(follower.process.running).toBe(true);
    expect(logged(follower, 'granted a new election lease')).toBeGreaterThanOrEqual(1);
    expect(logged(follower, 'leading')).toBe(1);
  });

  it('etcd down for 3 s: the follower retries granting a lease until etcd is back, then leads once the leader is gone', async () => {
    const { leader, follower } = await twoMasters(etcd);
    await etcd.process.kill();
    const downAt = performance.now();
    expect((await leader.process.exited).code).toBe(4);
    // Refused at once while etcd is down: the follower asks again and again, and stays up.
    await waitFor(
      () => logged(follower, 'could not grant an election lease; retrying') >= 2 || undefined,
      {
        timeoutMs: 20_000,
        description: 'the follower retries granting a lease',
      },
    );
    await sleep(Math.max(0, 3_000 - (performance.now() - downAt)));
    expect(follower.process.running).toBe(true);
    await etcd.restart();
    const backAt = performance.now();

    // etcd restores the dead leader's lease with a full TTL: the follower leads once it ends.
    await waitFor(() => leads(follower).then((yes) => yes || undefined), {
      timeoutMs: 30_000,
      intervalMs: 50,
      description: 'the follower leads',
    });
    console.log(`follower leads ${Math.round(performance.now() - backAt)} ms after etcd restarted`);
    expect(follower.process.running).toBe(true);
    expect(logged(follower, 'granted a new election lease')).toBeGreaterThanOrEqual(1);
  });

  it('an etcd restart shorter than the trusted window costs nothing: no exit, the same leader', async () => {
    // TTL 3 s: keep-alives every 0.5 s, each trusted for 2 s; etcd is refused for about 0.5 s.
    const { leader, follower } = await twoMasters(etcd, 3);
    for (let restart = 0; restart < 3; restart++) {
      await etcd.process.kill();
      await etcd.restart();
      await sleep(1_500);
    }
    const retried = [leader, follower].map((m) => logged(m, 'lease keep-alive failed; retrying'));
    console.log(
      `keep-alives retried during 3 etcd restarts (leader, follower): ${retried.join(', ')}`,
    );
    expect(leader.process.running).toBe(true);
    expect(follower.process.running).toBe(true);
    expect(await leads(leader)).toBe(true);
    expect(await leads(follower)).toBe(false);
    expect(logged(leader, 'the election lease can no longer be trusted; stepping down')).toBe(0);
    expect(logged(follower, 'the election lease was lost while a candidate')).toBe(0);
    expect(logged(leader, 'leading')).toBe(1);
    expect(logged(follower, 'leading')).toBe(0);
  });
});
