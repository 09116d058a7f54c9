import { randomBytes } from 'node:crypto';
import type { GetTaskResponse__Output } from '@pserver/proto';
import { backoffDelayMs, backoffPolicies, retry, RpcError } from '@pserver/rpc';
import { ClientError } from './errors';
import type { MasterLink } from './master-link';
import { readLines } from './read-lines';

/** A task handed to this trainer: a byte range of a line file, or a range of record indices. */
export interface DatasetTask {
  id: number;
  /** This hand-out's number: reports carry it, and the master ignores those of older ones. */
  dispatch: number;
  pass: number;
  /** Lines that begin in [start, end) of the file (see `readRecords`). */
  file?: { path: string; start: number; end: number };
  /** Records [start, end) of a generated dataset. */
  records?: { start: number; end: number };
  /** Records read through `readRecords` so far. */
  consumed: number;
}

/**
 * The lines of a file task, each read by exactly one task of the pass (the input-split rule).
 * Counts what it yields, for the task's report.
 */
export async function* readRecords(task: DatasetTask): AsyncGenerator<string> {
  if (!task.file) {
    throw new ClientError(
      'CLIENT_NOT_A_FILE_TASK',
      `task ${task.id}: a range of generated records; use task.records.start and end`,
    );
  }
  for await (const line of readLines(task.file.path, task.file.start, task.file.end)) {
    task.consumed++;
    yield line;
  }
}

/** What the task iteration needs of its client. */
export interface TaskSource {
  readonly master: MasterLink;
  readonly trainerId: number;
  readonly signal: AbortSignal;
  /**
   * Called each time no task is free yet (others hold the pass's last ones): under SYNC and SSP
   * the trainer takes a step with no data, so that no step of the others waits for it.
   */
  idle?(): Promise<void>;
}

/**
 * The tasks of `pass` for this trainer, until the pass is over. A task is reported finished
 * when the loop asks for the next one, and failed when the loop ends without doing so (the
 * trainer's code threw, or broke out): the master then gives it to another trainer. While no
 * task is free the trainer is idle (`TaskSource.idle`).
 */
export async function* tasksOf(source: TaskSource, pass: number): AsyncGenerator<DatasetTask> {
  // One id per task asked for, kept until a task comes: a GetTask whose reply was lost (the
  // master died after committing the hand-out) and that is sent again gets that same task,
  // instead of leaving it pending under this live trainer until its timeout.
  let requestId = newRequestId();
  let expired = 0;
  for (;;) {
    const reply = await retry(
      () => source.master.getTask(source.trainerId, pass, requestId, source.signal),
      {
        policy: backoffPolicies.taskPoll,
        signal: source.signal,
        // The session ended (a long pause): the client registers again under a new id.
        retryIf: (err) =>
          err instanceof RpcError && err.code === 'MASTER_SESSION_EXPIRED' && ++expired <= 20,
        // No task is free yet (others hold the pass's last ones): ask again, idle meanwhile.
        again: (reply) =>
          reply.outcome !== 'GET_TASK_OUTCOME_PASS_OVER' &&
          !(reply.outcome === 'GET_TASK_OUTCOME_TASK' && reply.task),
        waitMs: (outcome, attempt) =>
          'error' in outcome
            ? backoffDelayMs(backoffPolicies.expiredSession, attempt)
            : outcome.result.retryAfterMs || undefined,
        onRetry: () => source.idle?.(),
      },
    );
    if (reply.outcome === 'GET_TASK_OUTCOME_PASS_OVER') return;
    const task = taskOf(reply);
    requestId = newRequestId();
    let finished = false;
    try {
      yield task;
      finished = true;
    } finally {
      const records = task.consumed || (task.records ? task.records.end - task.records.start : 0);
      if (finished)
        await source.master.taskFinished(source.trainerId, task, records, source.signal);
      else
        await source.master
          .taskFailed(source.trainerId, task, 'the trainer stopped before finishing the task')
          .catch(() => undefined);
    }
  }
}

/** 128 random bits in hex: unique per trainer without coordination. */
export function newRequestId(): string {
  return randomBytes(16).toString('hex');
}

function taskOf(reply: GetTaskResponse__Output): DatasetTask {
  const task = reply.task!;
  return {
    id: task.id,
    dispatch: task.dispatch,
    pass: task.pass,
    ...(task.file ? { file: { ...task.file } } : {}),
    ...(task.records ? { records: { ...task.records } } : {}),
    consumed: 0,
  };
}
