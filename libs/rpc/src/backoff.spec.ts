import { backoffDelayMs, type BackoffPolicy } from './backoff';
import { backoffPolicies } from './backoff-policies';

/** The least and the most random() gives. */
const lowest = (): number => 0;
const highest = (): number => 1 - Number.EPSILON;

/** The delays of retries 1..n with random() fixed at `random`, rounded to whole ms. */
const delays = (policy: BackoffPolicy, n: number, random: () => number): number[] =>
  Array.from({ length: n }, (_, i) => Math.round(backoffDelayMs(policy, i + 1, random)));

describe('backoffDelayMs', () => {
  it('doubles from firstMs up to maxMs', () => {
    const policy: BackoffPolicy = { firstMs: 20, maxMs: 500, growth: 'doubling', jitter: 'none' };
    expect(delays(policy, 7, Math.random)).toEqual([20, 40, 80, 160, 320, 500, 500]);
  });

  it('grows by addMs, or stays at firstMs', () => {
    const linear: BackoffPolicy = { firstMs: 0, maxMs: 120, growth: { addMs: 50 }, jitter: 'none' };
    expect(delays(linear, 5, Math.random)).toEqual([0, 50, 100, 120, 120]);
    const constant: BackoffPolicy = { firstMs: 70, maxMs: 70, growth: 'constant', jitter: 'none' };
    expect(delays(constant, 3, Math.random)).toEqual([70, 70, 70]);
  });

  it('draws a full-jitter wait from [0, wait) and a half-jitter one from [wait/2, wait)', () => {
    const full: BackoffPolicy = { firstMs: 100, maxMs: 400, growth: 'doubling', jitter: 'full' };
    expect(delays(full, 4, lowest)).toEqual([0, 0, 0, 0]);
    expect(delays(full, 4, highest)).toEqual([100, 200, 400, 400]);
    expect(backoffDelayMs(full, 2, () => 0.25)).toBe(50);
    const half: BackoffPolicy = { ...full, jitter: 'half' };
    expect(delays(half, 4, lowest)).toEqual([50, 100, 200, 200]);
    expect(delays(half, 4, highest)).toEqual([100, 200, 400, 400]);
    expect(backoffDelayMs(half, 2, () => 0.5)).toBe(150);
  });

  it('stays finite and capped however many retries there were', () => {
    const policy: BackoffPolicy = { firstMs: 1, maxMs: 30, growth: 'doubling', jitter: 'none' };
    expect(backoffDelayMs(policy, 5_000)).toBe(30);
  });
});

describe('backoffPolicies', () => {
  // The constants the loops had before they shared this table: a change here changes how the
  // system behaves while something is down, and must be meant.
  const expected: Record<keyof typeof backoffPolicies, { low: number[]; high: number[] }> = {
    electionLease: {
      low: [100, 200, 400, 800, 1_000, 1_000],
      high: [200, 400, 800, 1_600, 2_000, 2_000],
    },
    pserversLeftPoll: { low: [500, 500, 500, 500, 500, 500], high: [500, 500, 500, 500, 500, 500] },
    shardFailover: { low: [0, 0, 0, 0, 0, 0], high: [50, 100, 200, 400, 800, 1_000] },
    masterFailover: { low: [0, 50, 100, 150, 200, 250], high: [0, 50, 100, 150, 200, 250] },
    masterWatch: { low: [100, 100, 100, 100, 100, 100], high: [100, 100, 100, 100, 100, 100] },
    initDecision: { low: [200, 200, 200, 200, 200, 200], high: [200, 200, 200, 200, 200, 200] },
    expiredSession: { low: [250, 250, 250, 250, 250, 250], high: [250, 250, 250, 250, 250, 250] },
    taskPoll: { low: [500, 500, 500, 500, 500, 500], high: [500, 500, 500, 500, 500, 500] },
    viewPoll: { low: [500, 500, 500, 500, 500, 500], high: [500, 500, 500, 500, 500, 500] },
    tenureWrite: { low: [200, 200, 200, 200, 200, 200], high: [200, 200, 200, 200, 200, 200] },
    jobFinishedWatch: {
      low: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
      high: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
    },
    drainPoll: { low: [200, 200, 200, 200, 200, 200], high: [200, 200, 200, 200, 200, 200] },
    replicaForward: { low: [20, 40, 80, 160, 320, 500], high: [20, 40, 80, 160, 320, 500] },
    replicaJoin: {
      low: [100, 200, 400, 800, 1_600, 2_000],
      high: [100, 200, 400, 800, 1_600, 2_000],
    },
  };

  it.each(Object.keys(expected) as (keyof typeof backoffPolicies)[])(
    '%s waits between its bounds for the first six retries',
    (name) => {
      const policy = backoffPolicies[name];
      expect(delays(policy, 6, lowest)).toEqual(expected[name].low);
      expect(delays(policy, 6, highest)).toEqual(expected[name].high);
    },
  );

  it.each(Object.entries(backoffPolicies))(
    '%s never waits less than 0 or more than its maxMs, with any jitter',
    (_, policy) => {
      for (let retry = 1; retry <= 40; retry++) {
        const ms = backoffDelayMs(policy, retry);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThanOrEqual(policy.maxMs);
      }
    },
  );
});
