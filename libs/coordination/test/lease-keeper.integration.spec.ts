import type { Etcd3 } from 'etcd3';
import { silentLogger, type Logger } from '@pserver/logging';
import { FaultProxy, sleep, startEtcd, waitFor, type EtcdServer } from '@pserver/testing';
import { connectEtcd, LeaseKeeper } from '../src';

// TTL 3 s: keep-alives every 0.5 s, each trusted for 2 s after it was sent.
const ttlSeconds = 3;
const trustedMs = 2_000;

let etcd: EtcdServer;
let client: Etcd3;

beforeAll(async () => {
  etcd = await startEtcd();
  client = connectEtcd({ endpoints: [etcd.endpoint] });
});

afterAll(async () => {
  client?.close();
  await etcd?.stop();
});

interface Kept {
  keeper: LeaseKeeper;
  expiries: string[];
  /** The keep-alives that failed and were retried, by the keeper's warnings. */
  retried: () => number;
  key: string;
}

/** A lease kept alive through `through` (the test's client unless said), a key held under it. */
async function keptLease(through: Etcd3 = client): Promise<Kept> {
  let retried = 0;
  const logger: Logger = {
    ...silentLogger,
    warn: (msg) => void (msg === 'lease keep-alive failed; retrying' && retried++),
    child: () => logger,
  };
  const keeper = await LeaseKeeper.grant(through, { ttlSeconds, logger });
  const expiries: string[] = [];
  keeper.onExpired((reason) => expiries.push(reason));
  const key = `${etcd.uniquePrefix('lease-keeper')}held`;
  await client.put(key).value('x').lease(keeper.id);
  return { keeper, expiries, retried: () => retried, key };
}

/** Resolves right after a keep-alive succeeded (the deadline moved): the start of a full window. */
async function nextKeepalive(keeper: LeaseKeeper): Promise<number> {
  const before = keeper.validUntil;
  return waitFor(() => (keeper.validUntil > before ? keeper.validUntil : undefined), {
    timeoutMs: 10_000,
    intervalMs: 5,
    description: 'a keep-alive succeeds',
  });
}

describe('LeaseKeeper against a real etcd', () => {
  it('rides through a keep-alive that fails: etcd paused, then killed and restarted while it is in flight', async () => {
    const { keeper, expiries, retried, key } = await keptLease();
    const validUntil = await nextKeepalive(keeper);
    // The keep-alives due at 0.5 s and 1 s hang on the paused etcd; at 1.05 s etcd is killed
    // (kill -9: it answers nothing more), which resets the connection, so that they fail; etcd
    // refuses connections until it has started again on its data. Retries reach it once it is
    // back, before the deadline at 2 s.
    await sleep(500);
    etcd.process.signal('SIGSTOP');
    await sleep(550);
    await etcd.process.kill();
    await etcd.restart();
    const backAtMs = trustedMs - (validUntil - performance.now());
    console.log(`etcd serving again ${Math.round(backAtMs)} ms into the trusted window`);
    await waitFor(
      () => {
        expect(expiries).toEqual([]);
        return keeper.validUntil > validUntil + 1_000 ? true : undefined;
      },
      { timeoutMs: 10_000, description: 'keep-alives succeed again' },
    );
    expect(retried()).toBeGreaterThan(0);
    expect(expiries).toEqual([]);
    expect(keeper.isValid()).toBe(true);
    expect(await client.get(key).string()).toBe('x');
    await keeper.revoke();
  });

  it('keeps the lease through etcd paused for less than the trusted window', async () => {
    const { keeper, expiries, key } = await keptLease();
    await nextKeepalive(keeper);
    etcd.process.signal('SIGSTOP');
    try {
      await sleep(1_200);
    } finally {
      etcd.process.signal('SIGCONT');
    }
    const resumedAt = performance.now();
    // Keep-alives go on: the lease is trusted past the pause by one sent after it.
    await sleep(trustedMs);
    expect(keeper.validUntil - trustedMs).toBeGreaterThan(resumedAt);
    expect(expiries).toEqual([]);
    expect(keeper.isValid()).toBe(true);
    expect(await client.get(key).string()).toBe('x');
    await keeper.revoke();
  });

  it('keeps the lease through an etcd that answers every keep-alive 0.6–0.8 s late', async () => {
    // Through a proxy holding each chunk 300–400 ms each way: every keep-alive is answered later
    // than TTL/6, but within the TTL/2 that keep-alives sent while others are in flight allow.
    const proxy = await FaultProxy.start(etcd.endpoint.replace(/^https?:\/\//, ''));
    const slowClient = connectEtcd({ endpoints: [`http://${proxy.address}`] });
    try {
      const { keeper, expiries, retried, key } = await keptLease(slowClient);
      proxy.set({ latencyMs: 350, jitterMs: 50 });
      const slowFrom = performance.now();
      await sleep(3 * trustedMs);
      expect(keeper.validUntil - trustedMs).toBeGreaterThan(slowFrom);
      expect([expiries, retried()]).toEqual([[], 0]);
      expect(keeper.isValid()).toBe(true);
      expect(await client.get(key).string()).toBe('x');
      proxy.set({ latencyMs: 0, jitterMs: 0 });
      await keeper.revoke();
    } finally {
      slowClient.close();
      await proxy.close();
    }
  });

  it('expires once, by the local deadline, when etcd is paused for longer', async () => {
    const { keeper, expiries } = await keptLease();
    const validUntil = await nextKeepalive(keeper);
    etcd.process.signal('SIGSTOP');
    let expiredAt: number;
    try {
      expiredAt = await waitFor(() => (expiries.length > 0 ? performance.now() : undefined), {
        timeoutMs: 10_000,
        intervalMs: 5,
        description: 'the lease expires locally',
      });
    } finally {
      etcd.process.signal('SIGCONT');
    }
    // At its deadline (plus timer slack), not before, and long before etcd's own expiry.
    expect(expiredAt).toBeGreaterThanOrEqual(validUntil);
    expect(expiredAt - validUntil).toBeLessThan(500);
    expect(validUntil - expiredAt + trustedMs).toBeGreaterThan(0);
    expect(expiries).toEqual(['the local lease deadline passed']);
    expect(keeper.isValid()).toBe(false);
    await sleep(1_000);
    expect(expiries).toHaveLength(1);
    keeper.close();
  });
});
