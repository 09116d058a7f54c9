import { EtcdLeaseInvalidError, GRPCDeadlineExceededError, GRPCUnavailableError } from 'etcd3';
import type { Etcd3 } from 'etcd3';
import { silentLogger } from '@pserver/logging';
import { EventEmitter } from 'node:events';
import { EtcdWithMembers } from './etcd';
import { keepAlivePolicy, LeaseKeeper } from './lease-keeper';

/** What the fake etcd does with one keep-alive. */
type Answer = 'ok' | 'unavailable' | 'hang' | 'gone' | { delayMs: number };

interface Attempt {
  sentAtMs: number;
  /** The attempt's deadline, as monotonic ms (the fake clock moves Date and performance together). */
  deadlineMs: number;
}

/**
 * An etcd lease whose keep-alives answer as scripted: `answers` are used in order, then 'ok'. A
 * hanging keep-alive fails when its deadline passes, as a gRPC call does.
 */
class FakeLease {
  readonly attempts: Attempt[] = [];
  readonly answers: Answer[] = [];
  released = false;

  constructor(private readonly ttlSeconds: number) {}

  grant(): Promise<string> {
    return Promise.resolve('7');
  }

  keepaliveOnce(options: { deadline: number }): Promise<{ TTL: string }> {
    const now = performance.now();
    const deadlineMs = now + (options.deadline - Date.now());
    this.attempts.push({ sentAtMs: now, deadlineMs });
    const answer = this.answers.shift() ?? 'ok';
    const ok = { TTL: String(this.ttlSeconds) };
    if (answer === 'ok') return Promise.resolve(ok);
    if (answer === 'unavailable') return Promise.reject(new GRPCUnavailableError('no etcd'));
    if (answer === 'gone') return Promise.reject(new EtcdLeaseInvalidError('7'));
    return new Promise((resolve, reject) => {
      const late = setTimeout(() => resolve(ok), answer === 'hang' ? 1e9 : answer.delayMs);
      setTimeout(() => {
        clearTimeout(late);
        reject(new GRPCDeadlineExceededError('deadline exceeded'));
      }, deadlineMs - now);
    });
  }

  release(): void {
    this.released = true;
  }

  revoke(): Promise<void> {
    this.released = true;
    return Promise.resolve();
  }
}

const ttlSeconds = 3;
const policy = keepAlivePolicy(ttlSeconds);
const trustedMs = 2_000;

/** A keeper on a fake lease, granted at fake time 0; `random` fixes the retry jitter. */
async function keeper(random = 0.5): Promise<{
  keeper: LeaseKeeper;
  lease: FakeLease;
  expiries: { reason: string; atMs: number }[];
}> {
  const lease = new FakeLease(ttlSeconds);
  const client = { lease: () => lease } as unknown as Etcd3;
  const kept = await LeaseKeeper.grant(client, {
    ttlSeconds,
    logger: silentLogger,
    random: () => random,
  });
  const expiries: { reason: string; atMs: number }[] = [];
  kept.onExpired((reason) => expiries.push({ reason, atMs: performance.now() }));
  return { keeper: kept, lease, expiries };
}

/** The fake clock's time when the test began: every time below is relative to it. */
let startMs = 0;

beforeEach(() => {
  jest.useFakeTimers();
  startMs = performance.now();
});

afterEach(() => {
  jest.useRealTimers();
});

describe('keepAlivePolicy', () => {
  it('is a keep-alive every TTL/6, at most 4 unanswered, retries after 100–250 ms', () => {
    expect(keepAlivePolicy(3)).toEqual({
      intervalMs: 500,
      retryDelayMs: 100,
      retryJitterMs: 150,
      maxInFlight: 4,
    });
  });
});

describe('LeaseKeeper (fake etcd, fake clock)', () => {
  it('sends a keep-alive every TTL/6 and trusts the lease for 2/3 TTL after each was sent', async () => {
    const { keeper: kept, lease } = await keeper();
    expect(kept.validUntil - startMs).toBe(trustedMs);
    await jest.advanceTimersByTimeAsync(6 * policy.intervalMs + 1);
    expect(lease.attempts.map((a) => a.sentAtMs - startMs)).toEqual([
      0, 500, 1_000, 1_500, 2_000, 2_500, 3_000,
    ]);
    expect(kept.validUntil - startMs).toBe(3_000 + trustedMs);
    expect(kept.isValid()).toBe(true);
    kept.close();
  });

  it.each([
    [0, 100],
    [1, 250],
  ])(
    'retries a failed keep-alive promptly (jitter %p: after %p ms) and keeps the lease',
    async (random, expectedDelayMs) => {
      const { keeper: kept, lease, expiries } = await keeper(random);
      lease.answers.push('unavailable');
      await jest.advanceTimersByTimeAsync(500 + 300);
      const [, failed, retried] = lease.attempts.map((a) => a.sentAtMs - startMs);
      expect(failed).toBe(500);
      expect(retried).toBeCloseTo(500 + expectedDelayMs, 0);
      expect(kept.validUntil - startMs).toBeCloseTo(retried! + trustedMs, 0);
      // Back on the usual cadence after the retry succeeded.
      await jest.advanceTimersByTimeAsync(500);
      expect(lease.attempts[3]!.sentAtMs - startMs).toBeCloseTo(retried! + 500, 0);
      expect(expiries).toEqual([]);
      expect(kept.isValid()).toBe(true);
      kept.close();
    },
  );

  it('keeps the lease when etcd answers every keep-alive late, but within TTL/2', async () => {
    const { keeper: kept, lease, expiries } = await keeper();
    lease.answers.push(...Array<Answer>(100).fill({ delayMs: 1_400 }));
    await jest.advanceTimersByTimeAsync(10_000);
    // Every keep-alive was answered, none given up: the next ones went out meanwhile.
    expect(lease.attempts.map((a) => a.sentAtMs - startMs).slice(0, 5)).toEqual([
      0, 500, 1_000, 1_500, 2_000,
    ]);
    expect(expiries).toEqual([]);
    expect(kept.isValid()).toBe(true);
    expect(kept.validUntil - startMs).toBeGreaterThan(10_000);
    kept.close();
  });

  it('loses the lease when etcd answers later than the trusted window', async () => {
    const { keeper: kept, lease, expiries } = await keeper();
    lease.answers.push(...Array<Answer>(100).fill({ delayMs: 2_100 }));
    await jest.advanceTimersByTimeAsync(5_000);
    expect(expiries).toEqual([
      { reason: 'the local lease deadline passed', atMs: startMs + trustedMs },
    ]);
    expect(kept.isValid()).toBe(false);
  });

  it('keeps at most 4 keep-alives unanswered', async () => {
    const lease = new FakeLease(ttlSeconds);
    const client = { lease: () => lease } as unknown as Etcd3;
    const kept = await LeaseKeeper.grant(client, {
      ttlSeconds,
      trustedFraction: 0.99,
      logger: silentLogger,
    });
    lease.answers.push(...Array<Answer>(100).fill({ delayMs: 2_400 }));
    await jest.advanceTimersByTimeAsync(2_600);
    // 0.5, 1, 1.5 and 2 s unanswered: none at 2.5 s.
    expect(lease.attempts.map((a) => a.sentAtMs - startMs)).toEqual([0, 500, 1_000, 1_500, 2_000]);
    await jest.advanceTimersByTimeAsync(500);
    // The one of 0.5 s answered at 2.9 s: the one of 3 s went out.
    expect(lease.attempts.at(-1)!.sentAtMs - startMs).toBe(3_000);
    expect(kept.isValid()).toBe(true);
    kept.close();
  });

  it('counts a late answer from when its keep-alive was sent, not from when it arrived', async () => {
    const { keeper: kept, lease } = await keeper();
    lease.answers.push({ delayMs: 400 });
    await jest.advanceTimersByTimeAsync(500 + 400 + 1);
    expect(kept.validUntil - startMs).toBe(500 + trustedMs);
    kept.close();
  });

  it('retries until the local deadline, then expires once, at the deadline', async () => {
    const { keeper: kept, lease, expiries } = await keeper();
    lease.answers.push(...Array<Answer>(100).fill('unavailable'));
    await jest.advanceTimersByTimeAsync(trustedMs - 1);
    expect(kept.isValid()).toBe(true);
    // From the first failure at 0.5 s to the deadline at 2 s, every 100–250 ms.
    expect(lease.attempts.length - 1).toBeGreaterThanOrEqual(5);
    await jest.advanceTimersByTimeAsync(2);
    expect(expiries).toEqual([
      { reason: 'the local lease deadline passed', atMs: expect.any(Number) },
    ]);
    expect(expiries[0]!.atMs - startMs).toBeGreaterThanOrEqual(trustedMs);
    expect(expiries[0]!.atMs - startMs).toBeLessThanOrEqual(trustedMs + 2);
    expect(kept.isValid()).toBe(false);
    const attemptsAtExpiry = lease.attempts.length;
    await jest.advanceTimersByTimeAsync(10_000);
    expect(lease.attempts).toHaveLength(attemptsAtExpiry);
    expect(expiries).toHaveLength(1);
  });

  it('gives each keep-alive up once its answer could extend nothing (2/3 TTL after it was sent)', async () => {
    const { keeper: kept, lease, expiries } = await keeper(0);
    lease.answers.push(...Array<Answer>(100).fill('hang'));
    await jest.advanceTimersByTimeAsync(5_000);
    const deadlines = lease.attempts.slice(1).map((a) => a.deadlineMs - a.sentAtMs);
    // Sent at 0.5, 1 and 1.5 s; none after the local deadline of 2 s.
    expect(lease.attempts.slice(1).map((a) => a.sentAtMs - startMs)).toEqual([500, 1_000, 1_500]);
    expect(deadlines).toEqual([trustedMs, trustedMs, trustedMs]);
    expect(expiries).toHaveLength(1);
    expect(expiries[0]!.atMs - startMs).toBeLessThanOrEqual(trustedMs + 2);
    expect(kept.isValid()).toBe(false);
  });

  it('expires at once when etcd says the lease is gone', async () => {
    const { keeper: kept, lease, expiries } = await keeper();
    lease.answers.push('gone');
    await jest.advanceTimersByTimeAsync(500);
    expect(expiries).toEqual([{ reason: 'etcd says the lease has expired', atMs: startMs + 500 }]);
    expect(kept.isValid()).toBe(false);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(lease.attempts).toHaveLength(2);
  });

  it('stops, and never reports an expiry, once closed', async () => {
    const { keeper: kept, lease, expiries } = await keeper();
    kept.close();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(lease.attempts).toHaveLength(1);
    expect(lease.released).toBe(true);
    expect(expiries).toEqual([]);
  });

  it('releases the lease when the first keep-alive after the grant fails', async () => {
    const lease = new FakeLease(ttlSeconds);
    lease.answers.push('unavailable');
    const client = { lease: () => lease } as unknown as Etcd3;
    await expect(LeaseKeeper.grant(client, { ttlSeconds, logger: silentLogger })).rejects.toThrow(
      'no etcd',
    );
    expect(lease.released).toBe(true);
    expect(lease.attempts[0]!.deadlineMs - lease.attempts[0]!.sentAtMs).toBe(trustedMs);
  });
});

describe('LeaseKeeper with several etcd members (fake members, fake clock)', () => {
  /**
   * A member whose keep-alive streams answer as scripted (then 'ok'); each stream it opened is
   * noted in `used` under its name. A hanging one fails at its deadline, as a gRPC stream does.
   */
  function member(name: string, used: string[], answers: ('ok' | 'hang')[] = []): Etcd3 {
    const leaseKeepAlive = ({ deadline }: { deadline: number }) => {
      used.push(name);
      const stream = Object.assign(new EventEmitter(), {
        write: () => {
          if ((answers.shift() ?? 'ok') === 'ok')
            setImmediate(() => stream.emit('data', { TTL: String(ttlSeconds) }));
          else
            setTimeout(
              () => stream.emit('error', new GRPCDeadlineExceededError('deadline exceeded')),
              deadline - Date.now(),
            );
        },
        end: () => undefined,
      });
      return Promise.resolve(stream);
    };
    return {
      leaseClient: { leaseKeepAlive },
      close: () => used.push(`${name} closed`),
    } as unknown as Etcd3;
  }

  it('keeps alive through one member, and moves to the next when it fails (one attempt lost)', async () => {
    const used: string[] = [];
    const members = [member('a', used, ['ok', 'hang']), member('b', used), member('c', used)];
    const client = new EtcdWithMembers({ hosts: ['http://127.0.0.1:1'] }, members);
    const lease = new FakeLease(ttlSeconds);
    Object.assign(client, { lease: () => lease });
    const kept = await LeaseKeeper.grant(client, { ttlSeconds, logger: silentLogger });
    const expiries: string[] = [];
    kept.onExpired((reason) => expiries.push(reason));
    await jest.advanceTimersByTimeAsync(6 * policy.intervalMs);
    // a answered once, then hung until the attempt's deadline; b took every keep-alive after.
    expect(used.slice(0, 4)).toEqual(['a', 'a', 'b', 'b']);
    expect(new Set(used.slice(2))).toEqual(new Set(['b']));
    expect(kept.isValid()).toBe(true);
    expect(expiries).toEqual([]);
    kept.close();
    client.close();
    expect(used.slice(-3)).toEqual(['a closed', 'b closed', 'c closed']);
  });
});
