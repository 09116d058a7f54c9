import { TaskQueue, type TaskRecord } from './task-queue';

const trainer = 7;

describe('TaskQueue', () => {
  it('hands out tasks in order, each once, and ends the pass when all are done', () => {
    const queue = new TaskQueue(3, 0, 3);
    const taken = [0, 1, 2].map(() => queue.take(trainer, 1_000)!);
    expect(taken.map((t) => [t.id, t.dispatch])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
    expect(queue.take(trainer, 1_000)).toBeUndefined();
    expect(queue.passOver).toBe(false);
    for (const t of taken) expect(queue.finish(t.id, t.dispatch, trainer, 10)).toBe(true);
    expect(queue.passOver).toBe(true);
    expect(queue.counts()).toEqual({
      pass: 0,
      todo: 0,
      pending: 0,
      done: 3,
      failed: 0,
      recordsProcessed: 30,
    });
    queue.nextPass();
    expect(queue.counts()).toMatchObject({ pass: 1, todo: 3, done: 0, recordsProcessed: 0 });
    // Dispatch numbers go on rising across passes.
    expect(queue.take(trainer, 1_000)).toEqual({ id: 0, dispatch: 2, deadlineUnixMs: 1_000 });
  });

  it('ignores reports about an earlier dispatch or from another trainer', () => {
    const queue = new TaskQueue(1, 0, 3);
    const first = queue.take(trainer, 100)!;
    expect(queue.expire(100)).toEqual([0]);
    const second = queue.take(8, 1_000)!;
    expect(second.dispatch).toBe(first.dispatch + 1);
    expect(queue.finish(0, first.dispatch, trainer, 5)).toBe(false);
    expect(queue.fail(0, second.dispatch, trainer)).toBe(false);
    expect(queue.statusOf(0)).toBe('pending');
    expect(queue.finish(0, second.dispatch, 8, 5)).toBe(true);
  });

  it('gives a failing task back until it failed more than maxFailures times, then sets it aside and the pass still ends', () => {
    const queue = new TaskQueue(2, 0, 2);
    const good = queue.take(trainer, 1_000)!;
    queue.finish(good.id, good.dispatch, trainer, 1);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const bad = queue.take(trainer, 1_000)!;
      expect(bad.id).toBe(1);
      expect(queue.fail(bad.id, bad.dispatch, trainer)).toBe(true);
    }
    expect(queue.statusOf(1)).toBe('failed');
    expect(queue.take(trainer, 1_000)).toBeUndefined();
    expect(queue.passOver).toBe(true);
    expect(queue.counts()).toMatchObject({ done: 1, failed: 1 });
  });

  it('takes back the tasks of a trainer that is gone, to the end of todo', () => {
    const queue = new TaskQueue(4, 0, 3);
    queue.take(trainer, 1_000);
    queue.take(8, 1_000);
    queue.take(trainer, 1_000);
    expect(queue.heldBy(trainer)).toEqual([0, 2]);
    expect(queue.release(trainer)).toEqual([0, 2]);
    expect([1, 2, 3].map(() => queue.take(9, 1_000)!.id)).toEqual([3, 0, 2]);
  });

  it('resumes from stored records: pending keep holder and deadline, done stay done, older passes are to do', () => {
    const stored = new Map<number, TaskRecord>([
      [0, { pass: 4, status: 'done', dispatch: 9, failures: 0, records: 12 }],
      [
        1,
        { pass: 4, status: 'pending', dispatch: 3, failures: 1, trainer: 8, deadlineUnixMs: 500 },
      ],
      [2, { pass: 3, status: 'done', dispatch: 6, failures: 0, records: 12 }],
      [3, { pass: 4, status: 'failed', dispatch: 5, failures: 4 }],
    ]);
    const queue = new TaskQueue(5, 4, 3, stored);
    expect(queue.counts()).toEqual({
      pass: 4,
      todo: 2,
      pending: 1,
      done: 1,
      failed: 1,
      recordsProcessed: 12,
    });
    expect(queue.record(1)).toEqual(stored.get(1));
    expect(queue.take(trainer, 1_000)).toEqual({ id: 2, dispatch: 7, deadlineUnixMs: 1_000 });
    expect(queue.take(trainer, 1_000)).toEqual({ id: 4, dispatch: 1, deadlineUnixMs: 1_000 });
    expect(queue.expire(499)).toEqual([]);
    expect(queue.expire(500)).toEqual([1]);
    expect(queue.record(1)).toMatchObject({ status: 'todo', failures: 2 });
  });

  it('finds the hand-out of a retried request id while it is pending, for its trainer only', () => {
    const queue = new TaskQueue(3, 0, 3);
    const first = queue.take(trainer, 1_000, 'r1')!;
    expect(queue.takenFor(trainer, 'r1')).toEqual(first);
    expect(queue.takenFor(8, 'r1')).toBeUndefined();
    expect(queue.takenFor(trainer, 'r2')).toBeUndefined();
    expect(queue.takenFor(trainer, '')).toBeUndefined();
    expect(queue.record(first.id)).toMatchObject({ status: 'pending', requestId: 'r1' });
    // Once finished (or given back), the id names nothing: a reuse of it takes a new task.
    queue.finish(first.id, first.dispatch, trainer, 1);
    expect(queue.takenFor(trainer, 'r1')).toBeUndefined();
    expect(queue.record(first.id).requestId).toBeUndefined();
    const second = queue.take(trainer, 1_000, 'r3')!;
    expect(queue.expire(1_000)).toEqual([second.id]);
    expect(queue.takenFor(trainer, 'r3')).toBeUndefined();
    // A take without an id is not found by any.
    const third = queue.take(trainer, 2_000)!;
    expect(queue.record(third.id).requestId).toBeUndefined();
    expect(queue.takenFor(trainer, '')).toBeUndefined();
  });

  it('resumes the request ids of pending tasks from stored records', () => {
    const pending: TaskRecord = {
      pass: 2,
      status: 'pending',
      dispatch: 4,
      failures: 0,
      trainer: 8,
      deadlineUnixMs: 900,
      requestId: 'abc',
    };
    const queue = new TaskQueue(2, 2, 3, new Map([[1, pending]]));
    expect(queue.takenFor(8, 'abc')).toEqual({ id: 1, dispatch: 4, deadlineUnixMs: 900 });
    expect(queue.record(1)).toEqual(pending);
    expect(queue.release(8)).toEqual([1]);
    expect(queue.takenFor(8, 'abc')).toBeUndefined();
  });

  it('handles a million tasks', () => {
    const queue = new TaskQueue(1_000_000, 0, 3);
    for (let i = 0; i < 1_000_000; i++) {
      const t = queue.take(trainer, 1)!;
      queue.finish(t.id, t.dispatch, trainer, 1);
    }
    expect(queue.passOver).toBe(true);
    expect(queue.counts().recordsProcessed).toBe(1_000_000);
  });
});
