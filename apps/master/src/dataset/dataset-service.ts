import type { DatasetStore, TrainerSessions } from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import type {
  GetTaskResponse,
  PassStatus,
  SetDatasetRequest__Output,
  SetDatasetResponse,
} from '@pserver/proto';
import { MasterError } from '../service/errors';
import { parseDatasetRequest, sameSpec, type DatasetSpec } from './dataset-spec';
import { groupFiles, listFiles } from './file-listing';
import { TaskQueue, type Dispatch, type TaskRecord } from './task-queue';
import { TaskTable, type DatasetFile } from './task-table';

/** What `data/spec` holds. */
interface StoredSpec {
  spec: DatasetSpec;
  tasks: number;
}

interface Dataset {
  spec: DatasetSpec;
  table: TaskTable;
  queue: TaskQueue;
}

/** How soon a trainer told to wait should ask again. */
const retryAfterMs = 500;
/** Clients send 32 hex digits; the bound keeps what is stored per pending task small. */
export const maxRequestIdLength = 128;

/**
 * The dataset side of the leading master: SetDataset, the task queues by pass, and their state
 * in etcd. Every change is made in memory and stored (one small key per task, see
 * `DatasetStore`) before the call that made it is answered, so a new leader resumes exactly:
 * pending tasks keep their holders and deadlines, and nothing finished is handed out again.
 */
export class DatasetService {
  private dataset: Dataset | undefined;
  private setting: Promise<SetDatasetResponse> | undefined;

  constructor(
    private readonly store: Pick<DatasetStore, 'load' | 'create' | 'write'>,
    private readonly sessions: Pick<TrainerSessions, 'requireAlive'>,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Loads the dataset a previous leader set, if any. */
  async load(): Promise<void> {
    const stored = await this.store.load();
    if (!stored) return;
    const { spec, tasks } = stored.spec as StoredSpec;
    const files = stored.fileGroups.flat() as DatasetFile[];
    const table = new TaskTable(spec.source, files);
    if (table.count !== tasks)
      throw new Error(`data/spec says ${tasks} tasks, the stored files make ${table.count}`);
    const queue = new TaskQueue(
      table.count,
      stored.pass,
      spec.maxFailures,
      stored.tasks as Map<number, TaskRecord>,
    );
    this.dataset = { spec, table, queue };
    this.logger.info('dataset loaded', { tasks: table.count, ...queue.counts() });
    // A write after the last task's may have been lost with the previous leader.
    await this.advanceIfOver();
  }

  /** Only the first dataset of a job counts; the same one again is acknowledged. */
  async setDataset(request: SetDatasetRequest__Output): Promise<SetDatasetResponse> {
    const spec = parseDatasetRequest(request);
    // One at a time: trainers starting together all send it.
    while (this.setting) await this.setting.catch(() => undefined);
    const setting = this.setDatasetNow(spec);
    this.setting = setting;
    try {
      return await setting;
    } finally {
      this.setting = undefined;
    }
  }

  private async setDatasetNow(spec: DatasetSpec): Promise<SetDatasetResponse> {
    if (this.dataset) {
      if (sameSpec(this.dataset.spec, spec))
        return { tasks: this.dataset.table.count, alreadySet: true };
      throw new MasterError(
        'MASTER_DATASET_ALREADY_SET',
        `SetDataset: the job's dataset is already set to ${JSON.stringify(this.dataset.spec.source)}; only the first SetDataset counts`,
      );
    }
    const files = spec.source.kind === 'files' ? await listFiles(spec.source.globs) : [];
    const table = new TaskTable(spec.source, files);
    const stored: StoredSpec = { spec, tasks: table.count };
    if (!(await this.store.create(stored, groupFiles(files)))) {
      // Set by an earlier leader whose state this one has not loaded: cannot happen after load().
      throw new MasterError('MASTER_NOT_LEADER', 'SetDataset: the dataset changed; ask again');
    }
    this.dataset = { spec, table, queue: new TaskQueue(table.count, 0, spec.maxFailures) };
    this.logger.info('dataset set', {
      source: spec.source,
      tasks: table.count,
      files: files.length,
    });
    return { tasks: table.count, alreadySet: false };
  }

  /**
   * Hands out a task of `pass`. A GetTask is retried with the same `requestId` when its reply was
   * lost (also to a new leader, which loaded the id with the pending task): the task already
   * handed out for (trainer, requestId) is answered again, same dispatch and deadline, instead of
   * a second one being taken while the first waits out its timeout under a live trainer.
   */
  async getTask(trainer: number, pass: number, requestId = ''): Promise<GetTaskResponse> {
    if (requestId.length > maxRequestIdLength) {
      throw new MasterError(
        'MASTER_INVALID_ARGUMENT',
        `requestId: at most ${maxRequestIdLength} characters, got ${requestId.length}`,
      );
    }
    this.sessions.requireAlive(trainer);
    const dataset = this.dataset;
    if (!dataset) return { outcome: 'GET_TASK_OUTCOME_NO_DATASET', retryAfterMs };
    const { queue, spec } = dataset;
    const currentPass = queue.pass;
    if (pass < currentPass) return { outcome: 'GET_TASK_OUTCOME_PASS_OVER', currentPass };
    if (pass > currentPass)
      return { outcome: 'GET_TASK_OUTCOME_PASS_NOT_STARTED', currentPass, retryAfterMs };
    const now = this.now();
    const taken =
      queue.takenFor(trainer, requestId) ??
      queue.take(trainer, now + spec.taskTimeoutMs, requestId);
    if (!taken) return { outcome: 'GET_TASK_OUTCOME_NO_TASK_AVAILABLE', currentPass, retryAfterMs };
    // Also for an answer given again: the first write may still be in flight (it is answered only
    // once committed), and a write proves this master still leads.
    await this.store.write([[taken.id, queue.record(taken.id)]]);
    return this.handedOut(dataset, taken, currentPass, now);
  }

  private handedOut(
    dataset: Dataset,
    taken: Dispatch,
    currentPass: number,
    now: number,
  ): GetTaskResponse {
    return {
      outcome: 'GET_TASK_OUTCOME_TASK',
      currentPass,
      task: {
        id: taken.id,
        dispatch: taken.dispatch,
        pass: currentPass,
        timeoutMs: Math.max(0, taken.deadlineUnixMs - now),
        ...dataset.table.rangeOf(taken.id),
      },
    };
  }

  /** A report about an earlier dispatch (or another trainer's) is ignored, as in PaddlePaddle. */
  async taskFinished(
    trainer: number,
    id: number,
    dispatch: number,
    records: number,
  ): Promise<void> {
    const { queue } = this.known(id);
    if (!queue.finish(id, dispatch, trainer, records)) return;
    await this.save([id]);
  }

  async taskFailed(trainer: number, id: number, dispatch: number, reason: string): Promise<void> {
    const { queue } = this.known(id);
    if (!queue.fail(id, dispatch, trainer)) return;
    this.logger.warn('task failed', { task: id, trainer, reason, status: queue.statusOf(id) });
    await this.save([id]);
  }

  /** Takes back the tasks whose deadline passed. */
  async expire(): Promise<void> {
    const queue = this.dataset?.queue;
    if (!queue) return;
    const expired = queue.expire(this.now());
    if (expired.length === 0) return;
    this.logger.warn('tasks timed out', { tasks: expired });
    await this.save(expired);
  }

  /** Takes back at once the tasks of a trainer whose session ended. */
  async release(trainer: number): Promise<void> {
    const queue = this.dataset?.queue;
    if (!queue) return;
    const released = queue.release(trainer);
    if (released.length === 0) return;
    this.logger.info('tasks of an ended session go back', { trainer, tasks: released });
    await this.save(released);
  }

  passStatus(): PassStatus | undefined {
    return this.dataset?.queue.counts();
  }

  pendingOf(trainer: number): number {
    return this.dataset?.queue.heldBy(trainer).length ?? 0;
  }

  private known(id: number): Dataset {
    const dataset = this.dataset;
    if (!dataset || !Number.isSafeInteger(id) || id < 0 || id >= dataset.table.count) {
      throw new MasterError(
        'MASTER_UNKNOWN_TASK',
        `taskId: no task ${id} in ${dataset ? `the dataset (ids 0 to ${dataset.table.count - 1})` : 'a job without a dataset'}`,
      );
    }
    return dataset;
  }

  /** Stores the tasks' new states, and the next pass if this change ended the current one. */
  private async save(ids: number[]): Promise<void> {
    const { queue } = this.dataset!;
    const records: [number, TaskRecord][] = ids.map((id) => [id, queue.record(id)]);
    if (!queue.passOver) return this.store.write(records);
    const ended = queue.counts();
    queue.nextPass();
    this.logger.info('pass over', { ...ended, next: queue.pass });
    await this.store.write(records, queue.pass);
  }

  private async advanceIfOver(): Promise<void> {
    const queue = this.dataset?.queue;
    if (!queue?.passOver) return;
    queue.nextPass();
    await this.store.write([], queue.pass);
  }
}
