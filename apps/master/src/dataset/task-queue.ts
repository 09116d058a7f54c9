export type TaskStatus = 'todo' | 'pending' | 'done' | 'failed';

/**
 * A task's state as stored in `data/tasks/<id>`, for the pass it was last touched in. A task whose
 * record is from an earlier pass (or that has none) is to do in the current pass; its dispatch
 * number carries over, so reports about an earlier hand-out never match a later one.
 */
export interface TaskRecord {
  pass: number;
  status: TaskStatus;
  dispatch: number;
  failures: number;
  trainer?: number;
  deadlineUnixMs?: number;
  /** The GetTask request id the pending task was handed out for (see `TaskQueue.takenFor`). */
  requestId?: string;
  records?: number;
}

/** One hand-out of a task. */
export interface Dispatch {
  id: number;
  dispatch: number;
  deadlineUnixMs: number;
}

export interface PassCounts {
  pass: number;
  todo: number;
  pending: number;
  done: number;
  failed: number;
  recordsProcessed: number;
}

const statuses: TaskStatus[] = ['todo', 'pending', 'done', 'failed'];
/** Waiting to be handed out: the 'todo' queue. */
const QUEUED = 0;
const PENDING = 1;
const DONE = 2;
const FAILED = 3;

/**
 * The tasks of a dataset in the current pass (PaddlePaddle's todo, pending, done and failed
 * queues): handed out first come first served, each with a deadline; a task that fails, times
 * out or whose trainer dies goes back to the end of todo until it has failed more than
 * `maxFailures` times, and is then set aside for the pass. The pass is over when nothing is to
 * do or pending, however many tasks were set aside. Pure: no clock, no I/O; sized for millions of
 * tasks (typed arrays, a ring of ids).
 */
export class TaskQueue {
  private readonly status: Uint8Array;
  private readonly dispatches: Float64Array;
  private readonly failures: Uint16Array;
  private readonly records: Float64Array;
  private readonly todo: IdRing;
  private readonly pending = new Map<number, Holder>();
  /** Pending task ids by `requestKey(trainer, requestId)`, for GetTasks that are retried. */
  private readonly byRequest = new Map<string, number>();
  private done = 0;
  private failed = 0;
  private recordsDone = 0;

  constructor(
    readonly size: number,
    private currentPass: number,
    private readonly maxFailures: number,
    stored: ReadonlyMap<number, TaskRecord> = new Map(),
  ) {
    this.status = new Uint8Array(size);
    this.dispatches = new Float64Array(size);
    this.failures = new Uint16Array(size);
    this.records = new Float64Array(size);
    this.todo = new IdRing(size);
    for (let id = 0; id < size; id++) {
      const record = stored.get(id);
      this.dispatches[id] = record?.dispatch ?? 0;
      if (!record || record.pass !== currentPass || record.status === 'todo') {
        if (record?.pass === currentPass) this.failures[id] = record.failures;
        this.todo.push(id);
        continue;
      }
      this.failures[id] = record.failures;
      this.status[id] = statuses.indexOf(record.status);
      if (record.status === 'pending') {
        this.hold(id, {
          trainer: record.trainer ?? 0,
          deadlineUnixMs: record.deadlineUnixMs ?? 0,
          ...(record.requestId ? { requestId: record.requestId } : {}),
        });
      } else if (record.status === 'done') {
        this.done++;
        this.records[id] = record.records ?? 0;
        this.recordsDone += this.records[id]!;
      } else {
        this.failed++;
      }
    }
  }

  get pass(): number {
    return this.currentPass;
  }

  /**
   * Hands the next task to do to `trainer`, due by `deadlineUnixMs`; undefined when none is. A
   * non-empty `requestId` names the GetTask it answers, so that a retry of it finds the same
   * hand-out (`takenFor`) instead of taking a second task.
   */
  take(trainer: number, deadlineUnixMs: number, requestId = ''): Dispatch | undefined {
    const id = this.todo.shift();
    if (id === undefined) return undefined;
    this.dispatches[id]!++;
    this.status[id] = PENDING;
    this.hold(id, { trainer, deadlineUnixMs, ...(requestId ? { requestId } : {}) });
    return { id, dispatch: this.dispatches[id]!, deadlineUnixMs };
  }

  /** The pending hand-out `take` made to `trainer` for `requestId`, if it is still pending. */
  takenFor(trainer: number, requestId: string): Dispatch | undefined {
    if (!requestId) return undefined;
    const id = this.byRequest.get(requestKey(trainer, requestId));
    if (id === undefined) return undefined;
    return {
      id,
      dispatch: this.dispatches[id]!,
      deadlineUnixMs: this.pending.get(id)!.deadlineUnixMs,
    };
  }

  /** Whether `id` is pending under this dispatch, held by `trainer`. Anything else is stale. */
  isCurrent(id: number, dispatch: number, trainer: number): boolean {
    return this.pending.get(id)?.trainer === trainer && this.dispatches[id] === dispatch;
  }

  /** Marks a current dispatch done; false (and no change) for a stale report. */
  finish(id: number, dispatch: number, trainer: number, records: number): boolean {
    if (!this.isCurrent(id, dispatch, trainer)) return false;
    this.unhold(id);
    this.status[id] = DONE;
    this.records[id] = records;
    this.done++;
    this.recordsDone += records;
    return true;
  }

  /** Counts a failure of a current dispatch; false (and no change) for a stale report. */
  fail(id: number, dispatch: number, trainer: number): boolean {
    if (!this.isCurrent(id, dispatch, trainer)) return false;
    this.giveBack(id);
    return true;
  }

  /** Takes back the tasks whose deadline has passed, each counted as a failure. */
  expire(nowUnixMs: number): number[] {
    const expired = [...this.pending]
      .filter(([, holder]) => holder.deadlineUnixMs <= nowUnixMs)
      .map(([id]) => id);
    for (const id of expired) this.giveBack(id);
    return expired;
  }

  /** Takes back every task `trainer` holds (its session ended), each counted as a failure. */
  release(trainer: number): number[] {
    const held = this.heldBy(trainer);
    for (const id of held) this.giveBack(id);
    return held;
  }

  heldBy(trainer: number): number[] {
    return [...this.pending].filter(([, holder]) => holder.trainer === trainer).map(([id]) => id);
  }

  /** Whether the pass is over: nothing to do and nothing pending. */
  get passOver(): boolean {
    return this.todo.length === 0 && this.pending.size === 0;
  }

  /** Starts the next pass with every task to do (dispatch numbers carry over). */
  nextPass(): void {
    this.currentPass++;
    this.status.fill(QUEUED);
    this.failures.fill(0);
    this.records.fill(0);
    this.todo.clear();
    for (let id = 0; id < this.size; id++) this.todo.push(id);
    this.done = 0;
    this.failed = 0;
    this.recordsDone = 0;
  }

  statusOf(id: number): TaskStatus {
    return statuses[this.status[id]!]!;
  }

  /** What to store for `id` now. */
  record(id: number): TaskRecord {
    const record: TaskRecord = {
      pass: this.currentPass,
      status: this.statusOf(id),
      dispatch: this.dispatches[id]!,
      failures: this.failures[id]!,
    };
    const holder = this.pending.get(id);
    if (holder) {
      record.trainer = holder.trainer;
      record.deadlineUnixMs = holder.deadlineUnixMs;
      if (holder.requestId) record.requestId = holder.requestId;
    }
    if (record.status === 'done') record.records = this.records[id]!;
    return record;
  }

  counts(): PassCounts {
    return {
      pass: this.currentPass,
      todo: this.todo.length,
      pending: this.pending.size,
      done: this.done,
      failed: this.failed,
      recordsProcessed: this.recordsDone,
    };
  }

  /** Back to the end of todo, or set aside once it has failed more than `maxFailures` times. */
  private giveBack(id: number): void {
    this.unhold(id);
    this.failures[id]!++;
    if (this.failures[id]! > this.maxFailures) {
      this.status[id] = FAILED;
      this.failed++;
    } else {
      this.status[id] = QUEUED;
      this.todo.push(id);
    }
  }

  private hold(id: number, holder: Holder): void {
    this.pending.set(id, holder);
    if (holder.requestId) this.byRequest.set(requestKey(holder.trainer, holder.requestId), id);
  }

  private unhold(id: number): void {
    const holder = this.pending.get(id);
    this.pending.delete(id);
    if (holder?.requestId) this.byRequest.delete(requestKey(holder.trainer, holder.requestId));
  }
}

/** Who holds a pending task, until when, and for which GetTask. */
interface Holder {
  trainer: number;
  deadlineUnixMs: number;
  requestId?: string;
}

function requestKey(trainer: number, requestId: string): string {
  return `${trainer}/${requestId}`;
}

/** A FIFO of task ids, each in it at most once, in a fixed ring. */
class IdRing {
  private readonly ids: Int32Array;
  private head = 0;
  private count = 0;

  constructor(capacity: number) {
    this.ids = new Int32Array(Math.max(1, capacity));
  }

  get length(): number {
    return this.count;
  }

  push(id: number): void {
    this.ids[(this.head + this.count) % this.ids.length] = id;
    this.count++;
  }

  shift(): number | undefined {
    if (this.count === 0) return undefined;
    const id = this.ids[this.head]!;
    this.head = (this.head + 1) % this.ids.length;
    this.count--;
    return id;
  }

  clear(): void {
    this.head = 0;
    this.count = 0;
  }
}
