import { sleep, waitFor } from './wait-for';

describe('waitFor', () => {
  it('resolves with the first truthy value of the predicate', async () => {
    let calls = 0;
    const value = await waitFor(() => (++calls >= 3 ? `after ${calls}` : undefined), {
      timeoutMs: 5_000,
      intervalMs: 1,
    });
    expect(value).toBe('after 3');
  });

  it('retries a predicate that throws and reports its last error at the bound', async () => {
    await expect(
      waitFor(
        () => {
          throw new Error('connection refused');
        },
        { timeoutMs: 50, intervalMs: 5, description: 'server up' },
      ),
    ).rejects.toThrow('waitFor: server up not met within 50 ms: last error: connection refused');
  });

  it('stops when its signal is aborted', async () => {
    const controller = new AbortController();
    const waiting = waitFor(() => false, {
      timeoutMs: 10_000,
      intervalMs: 5,
      signal: controller.signal,
    });
    controller.abort(new Error('test over'));
    await expect(waiting).rejects.toThrow('test over');
  });
});

describe('sleep', () => {
  it('rejects at once when aborted', async () => {
    const controller = new AbortController();
    const sleeping = sleep(60_000, controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(sleeping).rejects.toThrow('cancelled');
  });
});
