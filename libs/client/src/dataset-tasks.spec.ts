import type { GetTaskResponse__Output } from '@pserver/proto';
import { tasksOf } from './dataset-tasks';
import type { MasterLink } from './master-link';

/** A master that answers GetTask from a script and records the request ids it was sent. */
function scriptedMaster(replies: Partial<GetTaskResponse__Output>[]): {
  master: MasterLink;
  requestIds: string[];
} {
  const requestIds: string[] = [];
  const master = {
    getTask: async (_trainer: number, _pass: number, requestId: string) => {
      requestIds.push(requestId);
      return { retryAfterMs: 1, ...replies.shift()! };
    },
    taskFinished: async () => ({}),
    taskFailed: async () => ({}),
  };
  return { master: master as unknown as MasterLink, requestIds };
}

const task = (id: number): Partial<GetTaskResponse__Output> => ({
  outcome: 'GET_TASK_OUTCOME_TASK',
  task: { id, dispatch: 1, pass: 0, records: { start: 0, end: 1 } } as never,
});

describe('tasksOf', () => {
  it('sends one request id until a task comes, then a new one for the next task', async () => {
    const { master, requestIds } = scriptedMaster([
      { outcome: 'GET_TASK_OUTCOME_NO_TASK_AVAILABLE' },
      { outcome: 'GET_TASK_OUTCOME_NO_TASK_AVAILABLE' },
      task(3),
      task(5),
      { outcome: 'GET_TASK_OUTCOME_PASS_OVER' },
    ]);
    const signal = new AbortController().signal;
    const ids: number[] = [];
    for await (const t of tasksOf({ master, trainerId: 7, signal }, 0)) ids.push(t.id);
    expect(ids).toEqual([3, 5]);
    const [a, b, c, d, e] = requestIds;
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect([b, c]).toEqual([a, a]);
    expect(new Set([a, d, e]).size).toBe(3);
  });

  it('is idle (SYNC and SSP: an empty step) each time no task is free, never otherwise', async () => {
    const { master } = scriptedMaster([
      task(1),
      { outcome: 'GET_TASK_OUTCOME_NO_TASK_AVAILABLE' },
      { outcome: 'GET_TASK_OUTCOME_NO_TASK_AVAILABLE' },
      task(2),
      { outcome: 'GET_TASK_OUTCOME_PASS_OVER' },
    ]);
    const signal = new AbortController().signal;
    const seen: string[] = [];
    const idle = async (): Promise<void> => {
      seen.push('idle');
    };
    for await (const t of tasksOf({ master, trainerId: 7, signal, idle }, 0))
      seen.push(`task ${t.id}`);
    expect(seen).toEqual(['task 1', 'idle', 'idle', 'task 2']);
  });
});
