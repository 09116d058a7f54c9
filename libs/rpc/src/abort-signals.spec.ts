import { getEventListeners } from 'node:events';
import {
  abortableSleep,
  createDeadlineSignal,
  createLinkedAbortController,
  onAbort,
} from './abort-signals';

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

describe('createLinkedAbortController', () => {
  it('aborts with the reason of whichever signal aborts first, and unlinks from the others', () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = createLinkedAbortController(a.signal, undefined, b.signal);
    expect(listeners(a.signal)).toBe(1);
    expect(listeners(b.signal)).toBe(1);
    b.abort('b went');
    expect(linked.signal.aborted).toBe(true);
    expect(linked.signal.reason).toBe('b went');
    expect(listeners(a.signal)).toBe(0);
    a.abort('later');
    expect(linked.signal.reason).toBe('b went');
  });

  it('is aborted at once when a signal already was, registering nothing', () => {
    const a = new AbortController();
    const done = new AbortController();
    done.abort('already');
    const linked = createLinkedAbortController(a.signal, done.signal);
    expect(linked.signal.reason).toBe('already');
    expect(listeners(a.signal)).toBe(0);
  });

  it('leaves no listener on a long-lived signal after cleanup, however often it is linked', () => {
    const closing = new AbortController();
    for (let i = 0; i < 1_000; i++) createLinkedAbortController(closing.signal).cleanup();
    expect(listeners(closing.signal)).toBe(0);
    const kept = createLinkedAbortController(closing.signal);
    kept.cleanup();
    closing.abort('closed');
    expect(kept.signal.aborted).toBe(false);
  });
});

describe('createDeadlineSignal', () => {
  it('aborts after its timeout with the reason given', async () => {
    const deadline = createDeadlineSignal(20, () => new Error('too late'));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(deadline.signal.reason).toEqual(new Error('too late'));
  });

  it('aborts with a TimeoutError by default', async () => {
    const deadline = createDeadlineSignal(1);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect((deadline.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('never aborts once cleaned up, nor without a finite timeout', async () => {
    const cleaned = createDeadlineSignal(10);
    cleaned.cleanup();
    const endless = createDeadlineSignal(undefined);
    const infinite = createDeadlineSignal(Infinity);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect([cleaned, endless, infinite].map((d) => d.signal.aborted)).toEqual([
      false,
      false,
      false,
    ]);
  });
});

describe('onAbort', () => {
  it('runs once on abort, at once if already aborted, and its undo removes the listener', () => {
    const seen: unknown[] = [];
    const c = new AbortController();
    const undo = onAbort(c.signal, (reason) => seen.push(reason));
    expect(listeners(c.signal)).toBe(1);
    c.abort('first');
    expect(seen).toEqual(['first']);
    onAbort(c.signal, (reason) => seen.push(`again ${String(reason)}`));
    expect(seen).toEqual(['first', 'again first']);
    undo();

    const d = new AbortController();
    onAbort(d.signal, () => seen.push('never'))();
    d.abort();
    expect(listeners(d.signal)).toBe(0);
    expect(seen).toHaveLength(2);
  });
});

describe('abortableSleep', () => {
  it('resolves after its time and leaves no listener', async () => {
    const c = new AbortController();
    await abortableSleep(5, c.signal);
    expect(listeners(c.signal)).toBe(0);
  });

  it("rejects with the signal's reason when it aborts first", async () => {
    const c = new AbortController();
    const sleeping = abortableSleep(60_000, c.signal);
    c.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
    expect(listeners(c.signal)).toBe(0);
  });
});
