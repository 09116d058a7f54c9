import { PserverError } from '../shard/errors';
import { checkGradients, type Shard, type TableEvictionIds } from '../shard/shard';
import { checkTablePush } from '../shard/table-spec';
import type { StagedPush } from '../shard/staged-push';
import type { JobConsistency } from '@pserver/coordination';
import type { StoredTensor } from '../shard/stored-tensor';
import { OpenStep, type TensorSum } from './open-step';
import type { ContributedRows, RowMean } from './row-sums';
import { ParkedCalls } from './parked-calls';
import type { Roster } from './roster';

/** What a SYNC push came to. */
export interface Contributed {
  outcome: 'PUSH_OUTCOME_ACCUMULATED' | 'PUSH_OUTCOME_DUPLICATE' | 'PUSH_OUTCOME_DROPPED_LATE';
  /** Gradients left out for NaN or ±Infinity (skip policy), and means that overflowed. */
  skippedNonFinite: string[];
  /** The trainer's last step counted on the shard after this push. */
  lastStep: number;
}

/**
 * A SYNC step closed without the contributions of `trainers`: they had finished it (their pushes
 * to it were acknowledged) before this shard was restored from a checkpoint, so they were lost.
 */
export interface LostContributions {
  step: number;
  trainers: number[];
}

/** A SYNC step just closed and applied, for a primary's replicas. */
export interface ClosedStep {
  step: number;
  /** The means applied (those left out for non-finite values are not), their bytes copied. */
  means: { tensor: StoredTensor; content: Buffer }[];
  /** The tables' rows applied, and the rows their apply evicted (what a replica replays). */
  tables: RowMean[];
  evictions: TableEvictionIds[];
  contributors: number[];
}

/** A step mark moved without anything applied (a trainer said it finished a step). */
export interface MovedMark {
  trainerId: number;
  step: number;
  updatedUnixMs: number;
}

export interface ShardConsistencyHooks {
  /** Told when a SYNC step closes without contributions lost with a crash (see `settle`). */
  onLost?: (lost: LostContributions) => void;
  /**
   * A primary with replicas: forwards a closed step; reads of the next step wait until it
   * resolves, so no trainer reads a step its replicas do not hold. Marks moved without anything
   * applied are kept for the next forward (`takeMovedMarks`).
   */
  onClosed?: (closed: ClosedStep) => Promise<void>;
}

/**
 * The job's consistency mode acting on one shard: who counts (the roster), what a SYNC push does
 * (it joins the open step, which closes and is applied once its roster contributed), and when a
 * read may go (parked until the clock it needs). Everything here runs synchronously between
 * awaits, so a read copied right after `beforeRead` resolves sees whole steps.
 *
 * The shard's clock: in SYNC the steps closed; in SSP the smallest step of the roster's marks (a
 * mark is the member's last step applied here). ASYNC has none and never parks.
 *
 * The roster may change while the shard serves (cluster jobs: trainers register and their
 * sessions end): a member that leaves is no longer waited for (the open step may close, the SSP
 * clock may move), one that joins is waited for from the open step on (SSP: from its first step
 * on this shard).
 */
export class ShardConsistency {
  readonly parked = new ParkedCalls();
  private open: OpenStep | undefined;
  private readonly unsubscribe: () => void;
  /** SYNC: the steps closed whose reads may go (with replicas: once the replicas hold them). */
  private released: number;
  /** Marks moved since the last forward (a primary with replicas). */
  private moved: MovedMark[] = [];

  constructor(
    readonly config: JobConsistency,
    readonly rosterSource: Roster,
    private readonly shard: Shard,
    private readonly hooks: ShardConsistencyHooks = {},
  ) {
    this.released = shard.closedSteps;
    if (config.mode === 'ssp' && rosterSource.countsFromStart)
      for (const member of rosterSource.members)
        if (!shard.marks.has(member)) shard.marks.set(member, 0);
    this.unsubscribe =
      config.mode === 'async'
        ? () => undefined
        : rosterSource.subscribe(() => this.rosterChanged());
  }

  /** In SYNC the steps closed; otherwise the pushes applied since the shard's state began. */
  get version(): number {
    return this.config.mode === 'sync' ? this.shard.closedSteps : this.shard.appliedSeq;
  }

  /** Every roster member's steps up to this one are in the shard's values (0 in ASYNC). */
  get clock(): number {
    switch (this.config.mode) {
      case 'async':
        return 0;
      case 'sync':
        return this.released;
      case 'ssp': {
        // A member counts from its first step here (standalone members from the start).
        let min = Infinity;
        for (const member of this.rosterSource.members)
          if (this.shard.marks.has(member)) min = Math.min(min, this.shard.marks.lastStep(member));
        return min === Infinity ? 0 : min;
      }
    }
  }

  get roster(): readonly number[] {
    return this.config.mode === 'async' ? [] : this.rosterSource.members;
  }

  /** The trainer's last step counted here: applied, or (SYNC) contributed to the open step. */
  lastStep(trainerId: number): number {
    const mark = this.shard.marks.lastStep(trainerId);
    return this.open?.has(trainerId) ? Math.max(mark, this.open.step) : mark;
  }

  /**
   * SYNC and SSP count only the roster's trainers: others are refused PSERVER_NOT_IN_ROSTER. A
   * trainer the roster has not seen is looked up where the roster is kept first: it may have
   * registered an instant ago.
   */
  async requireMember(trainerId: number, what: string): Promise<void> {
    if (this.config.mode === 'async' || this.rosterSource.has(trainerId)) return;
    const member = await this.rosterSource.confirm(trainerId).catch((err: unknown) => {
      throw new PserverError(
        'PSERVER_NOT_SERVING',
        `${what}: trainer ${trainerId} is not in the roster seen so far, and the roster could not be read again: ${(err as Error).message}`,
      );
    });
    if (member) return;
    throw new PserverError(
      'PSERVER_NOT_IN_ROSTER',
      `${what}: trainer ${trainerId} is not in the roster of this ${this.config.mode.toUpperCase()} job (${describeRoster(this.rosterSource.members)})`,
    );
  }

  /**
   * Waits until a read for `step` by `trainerId` may go: in SYNC once step − 1 is closed, in SSP
   * once every roster member reached step − 1 − staleness. A read outside a step (step 0: tools,
   * evaluators) never waits. The read also says the trainer finished step − 1 (`finished`).
   */
  async beforeRead(
    trainerId: number,
    step: number,
    signal: AbortSignal,
    what = 'GetParams',
  ): Promise<void> {
    const config = this.config;
    if (config.mode === 'async' || step === 0) return;
    await this.requireMember(trainerId, what);
    this.finished(trainerId, step - 1, what);
    const needed = config.mode === 'sync' ? step - 1 : step - 1 - config.staleness;
    await this.parked.wait(needed, () => this.clock, signal);
  }

  /**
   * SYNC: waits until a push for `step` may join the open step: a push for a later step waits
   * for the steps before it to close, rather than being refused. Its trainer saw them close on
   * other shards first: a trainer reads only the shards of the tensors it reads, the last
   * contribution here may still be on its way, and a shard restored behind the job closes the
   * steps its trainers finished only as they tell it so (`finished`).
   */
  async beforePush(trainerId: number, step: number, signal: AbortSignal): Promise<void> {
    if (this.config.mode !== 'sync' || step === 0) return;
    this.finished(trainerId, step - 1, 'SendGrads');
    await this.parked.wait(step - 1, () => this.clock, signal);
  }

  /**
   * A read or push of step s + 1 says its trainer finished step s everywhere: the client starts a
   * step only after every push of the step before was acknowledged. Its mark moves to s if it was
   * behind, which is where a shard restored from an older checkpoint, or a replica promoted
   * without the open step's contributions, learns what the trainers did since: in SSP the
   * slowest clock moves again (Angel's clock adjustment). In SYNC a step whose contributions were
   * lost closes without them (`settle`) instead of waiting forever for pushes no trainer sends
   * again — but under the `rerun` policy the step s itself, still open here, is not given up:
   * the trainer is asked to send its push of s again (PSERVER_RESEND_STEP; its client keeps the
   * push until the next step went through on every shard), so s closes with exactly the
   * contributions it would have had. Only steps before s, which no client holds any more, can be
   * lost (a shard restored from a checkpoint more than one step behind).
   */
  private finished(trainerId: number, step: number, what: string): void {
    const last = this.lastStep(trainerId);
    if (last >= step && this.shard.marks.has(trainerId)) return;
    const resend =
      this.config.mode === 'sync' &&
      this.config.failover === 'rerun' &&
      last < step &&
      step > this.shard.closedSteps;
    const mark = resend ? step - 1 : step;
    if (mark > this.shard.marks.lastStep(trainerId) || !this.shard.marks.has(trainerId)) {
      const now = Date.now();
      this.shard.marks.set(trainerId, mark, now);
      if (this.hooks.onClosed) this.moved.push({ trainerId, step: mark, updatedUnixMs: now });
      if (this.config.mode === 'sync') this.settle();
      else this.parked.advanced(this.clock);
    }
    if (resend)
      throw new PserverError(
        'PSERVER_RESEND_STEP',
        `${what} for step ${step + 1}: this shard holds no contribution of trainer ${trainerId} to step ${step}, which is open here (it was lost with a failover): send the push of step ${step} again, then retry`,
      );
  }

  /**
   * SYNC: what a push of `trainerId` for `step` comes to before anything is staged — a duplicate
   * (counted already) or late (the step closed without it) — or undefined when it joins the open
   * step. `beforePush` has waited for the steps before `step` to close.
   */
  classify(trainerId: number, step: number): Contributed | undefined {
    const last = this.lastStep(trainerId);
    if (step <= last)
      return { outcome: 'PUSH_OUTCOME_DUPLICATE', skippedNonFinite: [], lastStep: last };
    const open = this.shard.closedSteps + 1;
    if (step < open)
      return { outcome: 'PUSH_OUTCOME_DROPPED_LATE', skippedNonFinite: [], lastStep: last };
    if (step > open) throw new Error(`step ${step} pushed before step ${open} closed`);
    return undefined;
  }

  /**
   * SYNC: adds a checked push to the open step (`classify` again first: a streamed push may have
   * become a duplicate or late while it arrived), and closes the step when the close rule holds.
   * The push's gradient buffers become the step's; a non-finite gradient is refused or left out
   * per its tensor's policy, as when applied.
   */
  contribute(trainerId: number, step: number, weight: number, push: StagedPush): Contributed {
    const settled = this.classify(trainerId, step);
    if (settled) return settled;
    if (this.config.mode !== 'sync') throw new Error('contribute outside SYNC');
    const gradients = push.complete();
    const verdicts = checkGradients(gradients);
    const rows = push.completeSparse().map(checkRows);
    const skippedNonFinite = gradients
      .filter((_, i) => verdicts[i] === 'skip')
      .map(({ tensor }) => tensor.name);
    // Checked before they are taken: a refused push's buffers are still the push's to free.
    const taken = push.detach().filter(({ buffer }, i) => {
      if (verdicts[i] === 'apply') return true;
      buffer.release();
      return false;
    });
    this.open ??= new OpenStep(step, this.rosterSource.members);
    this.open.expect(trainerId);
    this.open.add({ trainerId, weight, gradients: taken, rows });
    skippedNonFinite.push(...this.settle());
    return { outcome: 'PUSH_OUTCOME_ACCUMULATED', skippedNonFinite, lastStep: step };
  }

  /** The marks moved since the last forward, for the next one (a primary with replicas). */
  takeMovedMarks(): MovedMark[] {
    const moved = this.moved;
    this.moved = [];
    return moved;
  }

  /** After a push was applied (ASYNC, SSP): reads waiting for the clock may go. */
  applied(): void {
    if (this.config.mode === 'ssp') this.parked.advanced(this.clock);
  }

  /** The shard stops serving: parked reads fail with `err`, the open step is dropped. */
  abandon(err: unknown): void {
    this.unsubscribe();
    this.parked.abandon(err);
    this.open?.discard();
    this.open = undefined;
  }

  /**
   * The roster changed: a member that left is waited for no more (SYNC: the open step may close;
   * SSP: the clock may move); one that joined takes its place in the open step's order.
   */
  private rosterChanged(): void {
    for (const member of this.rosterSource.members) this.open?.expect(member);
    if (this.config.mode === 'sync') this.settle();
    else this.parked.advanced(this.clock);
  }

  /**
   * SYNC: closes the open step while the close rule holds — K contributions arrived, or every
   * roster member either contributed or finished the step already (its contribution was lost
   * with a crash of this shard; a step that lost them all closes applying nothing). A member
   * that left no longer counts; its contribution, if it made one, does. Returns the tensors left
   * out for non-finite means.
   */
  private settle(): string[] {
    if (this.config.mode !== 'sync') return [];
    const roster = this.rosterSource.members;
    const k = this.config.replicasToAggregate;
    const skipped: string[] = [];
    // Every trainer left: the open step closes with what it has (the roster shrank to fewer than
    // those who contributed), and no later step opens until one joins.
    if (roster.length === 0) return this.open ? this.close(this.open) : [];
    for (;;) {
      const step = this.shard.closedSteps + 1;
      const open = this.open ?? new OpenStep(step, roster);
      const missing = roster.filter((member) => !open.has(member));
      const byK = k > 0 ? open.contributors.length >= k : missing.length === 0;
      if (!byK && missing.some((member) => this.shard.marks.lastStep(member) < step)) break;
      skipped.push(...this.close(open));
      if (!byK && missing.length > 0) this.hooks.onLost?.({ step, trainers: missing });
    }
    return skipped;
  }

  private close(open: OpenStep): string[] {
    this.open = undefined;
    const { tensors, tables } = open.close();
    const copies = this.hooks.onClosed ? tensors.map(copyOf) : [];
    const { skipped, evictions } = this.shard.applyStep(
      open.step,
      tensors,
      open.contributors,
      tables,
    );
    const closed = this.shard.closedSteps;
    const replicated = this.hooks.onClosed?.({
      step: open.step,
      means: copies.filter(({ tensor }) => !skipped.includes(tensor.name)),
      tables: tables.filter(({ table }) => !skipped.includes(table.table.name)),
      evictions,
      contributors: open.contributors,
    });
    if (!replicated) this.release(closed);
    // A failed forward ends the tenure: the reads waiting are abandoned with it.
    else
      replicated.then(
        () => this.release(closed),
        () => undefined,
      );
    return skipped;
  }

  private release(closed: number): void {
    this.released = Math.max(this.released, closed);
    this.parked.advanced(this.released);
  }
}

/**
 * A push's rows of one table, checked as an ASYNC push's are (lengths, placement, finite values,
 * room for new rows; nothing of the push is kept otherwise) and merged (each id once).
 */
function checkRows({
  table,
  ids,
  grads,
  counts,
}: ReturnType<StagedPush['completeSparse']>[number]): ContributedRows {
  const checked = checkTablePush(table, { ids, grads, ...(counts && { counts }) });
  return {
    table,
    lo: checked.lo,
    hi: checked.hi,
    occurrences: checked.occurrences,
    grads: checked.grads,
  };
}

/** A mean's bytes, copied before the step applies it (and releases its buffer). */
function copyOf({ tensor, buffer }: TensorSum): { tensor: StoredTensor; content: Buffer } {
  const { values } = buffer;
  return {
    tensor,
    content: Buffer.from(new Uint8Array(values.buffer, values.byteOffset, values.byteLength)),
  };
}

function describeRoster(roster: readonly number[]): string {
  return roster.length <= 8
    ? `trainers ${roster.join(', ')}`
    : `${roster.length} trainers, ${roster[0]}..${roster.at(-1)}`;
}
