import type { StepMarkSnapshot } from '@pserver/checkpoint';
import { OptimizerError, type GradientBuffer, type TensorMemory } from '@pserver/optimizer';
import { PserverError } from './errors';
import type { StagedPush } from './staged-push';
import { MarksAhead, type SliceGroupSnapshot } from './marks-ahead';
import { StepMarks } from './step-marks';
import type { StoredTensor } from './stored-tensor';
import { checkTablePush, type ShardTable } from './table-spec';

/** What applying a push did. */
export interface AppliedPush {
  /** Gradients left out for NaN or ±Infinity (skip policy). */
  skippedNonFinite: string[];
  sparse: SparseOutcome[];
  /** The rows each table evicted, as (low, high) id pairs: what a replica replays. */
  evictions: TableEvictionIds[];
}

/** A closed SYNC step's mean of one tensor; `applyStep` releases its buffer. */
export interface TensorMean {
  tensor: StoredTensor;
  buffer: GradientBuffer;
}

/** A table's part of a closed step, as a push carries it (bytes, little-endian). */
export interface RowMean {
  table: ShardTable;
  /** int64 ids. */
  ids: Uint8Array;
  /** float32 rows, ids × dim. */
  grads: Uint8Array;
  /** uint32 occurrences, one per id: the step's, summed over its contributions. */
  counts: Uint8Array;
}

/** Ids a push evicted from one table, as (low, high) 32-bit pairs (int64 LE as bytes). */
export interface TableEvictionIds {
  table: string;
  ids: Uint32Array;
}

/** What a push did to one table. */
export interface SparseOutcome {
  table: string;
  rowsUpdated: number;
  rowsCreated: number;
  rowsRejected: number;
}

/**
 * The shard's state: its tensors, whether it is initialized, the trainers' step marks. Every
 * mutation runs synchronously from start to end, so a reply built from the shard sees each push
 * either whole or not at all. It applies what it is given; whether a push is applied at all (a
 * duplicate, late, part of a SYNC step) is decided before, by the push's fate (`push-fate.ts`).
 */
export class Shard {
  readonly tensors = new Map<string, StoredTensor>();
  /** The tables this shard holds buckets of. */
  readonly tables = new Map<string, ShardTable>();
  readonly marks = new StepMarks();
  /** Marks some slices hold ahead of `marks` (after a restore onto another shard count). */
  readonly ahead = new MarksAhead();
  /** Gradients applied since start. */
  updatesApplied = 0;
  /**
   * Pushes applied, counted from the copy this shard started from: the sequence numbers of
   * replication (a replica's shard counts the primary's pushes in the primary's order).
   */
  appliedSeq = 0;
  /**
   * SYNC: the steps closed (applied) so far; the open step is the next. Kept in checkpoints with
   * the marks of the trainers that contributed to them.
   */
  closedSteps = 0;
  private initializedFlag = false;
  private readonly initWaiters = new Set<{ resolve: () => void; reject: (err: unknown) => void }>();

  constructor(
    readonly index: number,
    readonly shardCount: number,
    /** Where float32 tensors live; undefined for the default. */
    readonly memory: TensorMemory | undefined,
  ) {}

  get initialized(): boolean {
    return this.initializedFlag;
  }

  get totalBytes(): number {
    let total = 0;
    for (const tensor of this.tensors.values()) total += tensor.byteLength;
    return total;
  }

  /** Adds or replaces a table (before initialization). */
  putTable(table: ShardTable): void {
    this.tables.set(table.spec.name ?? '', table);
  }

  /** Adds or replaces a tensor (before initialization). */
  put(tensor: StoredTensor): void {
    this.tensors.get(tensor.name)?.release();
    this.tensors.set(tensor.name, tensor);
  }

  /** Replaces the shard's content with a recovered one and marks it initialized. */
  load(
    tensors: StoredTensor[],
    tables: ShardTable[],
    marks: StepMarkSnapshot[],
    updatesApplied: number,
    closedSteps = 0,
    marksAhead: readonly SliceGroupSnapshot[] = [],
  ): void {
    for (const tensor of this.tensors.values()) tensor.release();
    this.tensors.clear();
    for (const tensor of tensors) this.tensors.set(tensor.name, tensor);
    this.tables.clear();
    for (const table of tables) this.putTable(table);
    for (const mark of marks) this.marks.set(mark.trainerId, mark.step, mark.updatedUnixMs);
    this.ahead.clear();
    for (const group of marksAhead) this.ahead.add(group, this.marks);
    this.updatesApplied = updatesApplied;
    this.closedSteps = closedSteps;
    this.markInitialized();
  }

  /**
   * Moves the trainer's mark to `step` on the whole shard (its marks ahead at or below it go):
   * its step `step` is counted here from now on.
   */
  markStep(trainerId: number, step: number, nowUnixMs = Date.now()): void {
    this.marks.set(trainerId, step, nowUnixMs);
    this.ahead.caughtUp(trainerId, step);
  }

  /**
   * Leaves out of a push of `trainerId`'s `step` the slices that counted that step already: they
   * came from a shard where it was applied (`MarksAhead`).
   */
  leaveOutCounted(trainerId: number, step: number, push: StagedPush): void {
    if (this.ahead.has(trainerId))
      push.leaveOut((slice) => this.ahead.counted(trainerId, step, slice));
  }

  markInitialized(): void {
    this.initializedFlag = true;
    for (const waiter of this.initWaiters) waiter.resolve();
    this.initWaiters.clear();
  }

  /** Resolves once initialized; rejects when `signal` aborts or `abandonWaiters` is called. */
  whenInitialized(signal: AbortSignal): Promise<void> {
    if (this.initializedFlag) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = (): void => {
        this.initWaiters.delete(waiter);
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.initWaiters.add(waiter);
    });
  }

  /** Rejects every wait for initialization with `err` (shutting down). */
  abandonWaiters(err: unknown): void {
    for (const waiter of this.initWaiters) waiter.reject(err);
    this.initWaiters.clear();
  }

  /**
   * Applies a staged push all or nothing: every gradient is checked first (a NaN or Infinity is
   * rejected or skipped per its tensor's policy), then all are applied, then the trainer's mark
   * moves to `step`. The caller has classified the push as one to apply (`fateOf`); slices that
   * counted the step already are left out (`leaveOutCounted`).
   * A replica passes `replayEvictions`, its primary's evictions of the same push (`evictions`):
   * its tables evict those rows and choose none of their own.
   */
  applyPush(
    trainerId: number,
    step: number,
    push: StagedPush,
    replayEvictions?: ReadonlyMap<string, Uint32Array>,
  ): AppliedPush {
    this.leaveOutCounted(trainerId, step, push);
    const gradients = push.complete();
    const verdicts = checkGradients(gradients);
    // Every table checks its part and reserves its new rows before anything changes.
    const prepared = push
      .completeSparse()
      .map(({ table, ids, grads, counts }) =>
        checkTablePush(table, { ids, grads, ...(counts && { counts }) }),
      );
    const skippedNonFinite: string[] = [];
    gradients.forEach(({ tensor, buffer }, i) => {
      if (verdicts[i] === 'skip') skippedNonFinite.push(tensor.name);
      else {
        tensor.apply(buffer);
        this.updatesApplied++;
      }
    });
    const evictions: TableEvictionIds[] = [];
    const sparse = prepared.map((p) => {
      const replay = replayEvictions && (replayEvictions.get(p.table.name) ?? new Uint32Array(0));
      // eslint-disable-next-line prefer-spread -- SparseTable.apply, not Function.prototype.apply
      const outcome = p.table.apply(p, replay);
      const { rowsUpdated, rowsCreated, rowsRejected, evictedIds } = outcome;
      if (evictedIds.length > 0) evictions.push({ table: p.table.name, ids: evictedIds });
      this.updatesApplied++;
      return { table: p.table.name, rowsUpdated, rowsCreated, rowsRejected };
    });
    this.markStep(trainerId, step);
    this.appliedSeq++;
    return { skippedNonFinite, sparse, evictions };
  }

  /**
   * SYNC: applies a closed step's means (each tensor's weighted mean, checked again: a sum of
   * finite gradients can overflow) and its tables' rows, and moves the contributors' marks to
   * `step`. A table whose rows cannot be applied (a mean that overflowed, new rows the table
   * cannot hold) is left out like a non-finite mean. A replica passes its primary's evictions
   * (`replayEvictions`). Returns the tensors and tables left out, and the rows each table evicted.
   */
  applyStep(
    step: number,
    means: readonly TensorMean[],
    contributors: readonly number[],
    tables: readonly RowMean[] = [],
    replayEvictions?: ReadonlyMap<string, Uint32Array>,
  ): { skipped: string[]; evictions: TableEvictionIds[] } {
    const skipped: string[] = [];
    for (const { tensor, buffer } of means) {
      let verdict: 'apply' | 'skip';
      try {
        verdict = tensor.check(buffer);
      } catch {
        verdict = 'skip';
      }
      if (verdict === 'skip') skipped.push(tensor.name);
      else {
        tensor.apply(buffer);
        this.updatesApplied++;
      }
      buffer.release();
    }
    const evictions: TableEvictionIds[] = [];
    for (const { table, ids, grads, counts } of tables) {
      let prepared;
      try {
        prepared = table.table.checkPush({ ids, grads, counts });
      } catch {
        skipped.push(table.table.name);
        continue;
      }
      const replay =
        replayEvictions && (replayEvictions.get(table.table.name) ?? new Uint32Array(0));
      const { evictedIds } = table.table.apply(prepared, replay);
      if (evictedIds.length > 0) evictions.push({ table: table.table.name, ids: evictedIds });
      this.updatesApplied++;
    }
    const now = Date.now();
    for (const trainerId of contributors) this.markStep(trainerId, step, now);
    this.closedSteps = step;
    this.appliedSeq++;
    return { skipped, evictions };
  }
}

/**
 * Each gradient's verdict ('apply' or 'skip' for a NaN or ±Infinity under the skip policy);
 * under the reject policy a non-finite gradient throws PSERVER_NON_FINITE_GRADIENT.
 */
export function checkGradients(
  gradients: readonly { tensor: StoredTensor; buffer: GradientBuffer }[],
): ('apply' | 'skip')[] {
  return gradients.map(({ tensor, buffer }) => {
    try {
      return tensor.check(buffer);
    } catch (err) {
      if (err instanceof OptimizerError && err.code === 'OPTIMIZER_NON_FINITE_GRADIENT') {
        throw new PserverError(
          'PSERVER_NON_FINITE_GRADIENT',
          `gradient ${tensor.name}: holds NaN or Infinity (policy NON_FINITE_POLICY_REJECT); nothing of the push was applied`,
        );
      }
      throw err;
    }
  });
}
