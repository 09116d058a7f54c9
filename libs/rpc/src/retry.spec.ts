import type { BackoffPolicy } from './backoff';
import { retry, RetryDeadlineError, type RetryEvent } from './retry';

const every100: BackoffPolicy = { firstMs: 100, maxMs: 100, growth: 'constant', jitter: 'none' };
const doubling: BackoffPolicy = { firstMs: 100, maxMs: 1_000, growth: 'doubling', jitter: 'none' };
const long: BackoffPolicy = { firstMs: 60_000, maxMs: 60_000, growth: 'constant', jitter: 'none' };

/** An operation that fails `failures` times, then returns 'done'; it notes when it ran. */
function flaky(failures: number): { run: () => Promise<string>; ranAtMs: number[] } {
  const startMs = performance.now();
  const ranAtMs: number[] = [];
  return {
    ranAtMs,
    run: () => {
      ranAtMs.push(performance.now() - startMs);
      return ranAtMs.length > failures
        ? Promise.resolve('done')
        : Promise.reject(new Error(`failure ${ranAtMs.length}`));
    },
  };
}

/** The settled outcome of `promise`, without an unhandled rejection while timers are advanced. */
function settle<T>(promise: Promise<T>): { outcome: () => { value?: T; error?: unknown } } {
  let outcome: { value?: T; error?: unknown } = {};
  void promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  return { outcome: () => outcome };
}

beforeEach(() => {
  jest.useFakeTimers();
});

afterEach(() => {
  jest.useRealTimers();
});

describe('retry', () => {
  it('runs the operation again after each failure, waiting as the policy says', async () => {
    const op = flaky(3);
    const events: RetryEvent<string>[] = [];
    const done = settle(retry(op.run, { policy: doubling, onRetry: (e) => void events.push(e) }));
    await jest.advanceTimersByTimeAsync(699);
    expect(op.ranAtMs).toEqual([0, 100, 300]);
    await jest.advanceTimersByTimeAsync(1);
    expect(op.ranAtMs).toEqual([0, 100, 300, 700]);
    expect(done.outcome()).toEqual({ value: 'done' });
    expect(
      events.map((e) => [e.attempt, e.delayMs, (e as { error: Error }).error.message]),
    ).toEqual([
      [1, 100, 'failure 1'],
      [2, 200, 'failure 2'],
      [3, 400, 'failure 3'],
    ]);
  });

  it('throws an error that retryIf refuses as it came, without waiting', async () => {
    const refused = new Error('refused');
    const op = jest.fn(() => Promise.reject(refused));
    const done = settle(retry(op, { policy: every100, retryIf: (err) => err !== refused }));
    await jest.advanceTimersByTimeAsync(0);
    expect(done.outcome()).toEqual({ error: refused });
    expect(op).toHaveBeenCalledTimes(1);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('ends a wait at once when the signal aborts, rejecting with its reason', async () => {
    const stopping = new AbortController();
    const op = flaky(Infinity);
    const done = settle(retry(op.run, { policy: long, signal: stopping.signal }));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(done.outcome()).toEqual({});
    stopping.abort(new Error('stopping'));
    // Time does not move: the wait ends on the abort itself, not on its timer.
    await jest.advanceTimersByTimeAsync(0);
    expect(done.outcome()).toEqual({ error: new Error('stopping') });
    expect(op.ranAtMs).toEqual([0]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('runs nothing when the signal has aborted already', async () => {
    const stopped = new AbortController();
    stopped.abort(new Error('stopped'));
    const op = jest.fn(() => Promise.resolve('done'));
    await expect(retry(op, { policy: every100, signal: stopped.signal })).rejects.toThrow(
      'stopped',
    );
    expect(op).not.toHaveBeenCalled();
  });

  it('asks retryIf before the signal: an error the abort caused can be thrown as it came', async () => {
    const closing = new AbortController();
    const cancelled = new Error('cancelled by the close');
    const op = (): Promise<string> => {
      closing.abort(new Error('closing'));
      return Promise.reject(cancelled);
    };
    await expect(
      retry(op, {
        policy: every100,
        signal: closing.signal,
        retryIf: () => !closing.signal.aborted,
      }),
    ).rejects.toBe(cancelled);
  });

  it('starts no attempt after timeoutMs, cutting the last wait short, and names the last error', async () => {
    const op = flaky(Infinity);
    const events: RetryEvent<string>[] = [];
    const done = settle(
      retry(op.run, { policy: every100, timeoutMs: 250, onRetry: (e) => void events.push(e) }),
    );
    await jest.advanceTimersByTimeAsync(249);
    expect(done.outcome()).toEqual({});
    await jest.advanceTimersByTimeAsync(1);
    expect(op.ranAtMs).toEqual([0, 100, 200]);
    expect(events.map((e) => e.delayMs)).toEqual([100, 100, 50]);
    const { error } = done.outcome();
    expect(error).toBeInstanceOf(RetryDeadlineError);
    expect(error).toMatchObject({ code: 'RETRY_DEADLINE_EXCEEDED', attempts: 3, timeoutMs: 250 });
    expect((error as Error).cause).toEqual(new Error('failure 3'));
    expect(jest.getTimerCount()).toBe(0);
  });

  it('polls while `again` says the result is not ready, waiting the hint it carries', async () => {
    const replies = [{ ready: false, hintMs: 30 }, { ready: false }, { ready: true }];
    const asked: number[] = [];
    const startMs = performance.now();
    const done = settle(
      retry(
        () => {
          asked.push(performance.now() - startMs);
          return Promise.resolve(replies.shift()!);
        },
        {
          policy: every100,
          again: (reply) => !reply.ready,
          waitMs: (outcome) => ('error' in outcome ? undefined : outcome.result.hintMs),
        },
      ),
    );
    await jest.advanceTimersByTimeAsync(130);
    expect(asked).toEqual([0, 30, 130]);
    expect(done.outcome()).toEqual({ value: { ready: true } });
  });

  it('awaits onRetry before it waits', async () => {
    const order: string[] = [];
    const op = flaky(1);
    const done = settle(
      retry(
        async () => {
          order.push('attempt');
          return op.run();
        },
        {
          policy: every100,
          onRetry: async () => {
            order.push('idle step begins');
            await new Promise((resolve) => setTimeout(resolve, 40));
            order.push('idle step ends');
          },
        },
      ),
    );
    await jest.advanceTimersByTimeAsync(139);
    expect(order).toEqual(['attempt', 'idle step begins', 'idle step ends']);
    await jest.advanceTimersByTimeAsync(1);
    expect(order).toEqual(['attempt', 'idle step begins', 'idle step ends', 'attempt']);
    expect(done.outcome()).toEqual({ value: 'done' });
  });
});
