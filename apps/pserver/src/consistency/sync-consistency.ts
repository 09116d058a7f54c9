import type { JobConsistency } from '@pserver/coordination';
import type { PushRecord } from '../shard/push-record';
import { checkGradients, type Shard, type TableEvictionIds } from '../shard/shard';
import type { StagedPush } from '../shard/staged-push';
import { checkTablePush } from '../shard/table-spec';
import { OpenStep, type TensorSum } from './open-step';
import type { Roster } from './roster';
import type { ContributedRows } from './row-sums';
import {
  ShardConsistency,
  type CallWait,
  type PushOutcome,
  type ShardConsistencyHooks,
} from './shard-consistency';

type Sync = Extract<JobConsistency, { mode: 'sync' }>;

/**
 * SYNC: a push joins the open step, which closes — its weighted means applied at once — when the
 * close rule holds (K contributions, or every roster member accounted for); a read for step s,
 * and a push for a step after the open one, wait until step s − 1 closed. With replicas, reads of
 * a step wait until its replicas hold it too.
 */
export class SyncConsistency extends ShardConsistency {
  private open: OpenStep | undefined;
  private readonly unsubscribe: () => void;
  /** The steps closed whose reads may go (with replicas: once the replicas hold them). */
  private released: number;
  /** During a live change of the count: no step after it closes (`holdSteps`, `closeThrough`). */
  private closeLimit: number | undefined;
  private readonly closedWaiters: { step: number; resolve: () => void }[] = [];

  constructor(config: Sync, roster: Roster, shard: Shard, hooks: ShardConsistencyHooks = {}) {
    super(config, roster, shard, hooks);
    this.released = shard.closedSteps;
    this.unsubscribe = roster.subscribe(() => this.rosterChanged());
  }

  private get sync(): Sync {
    return this.config as Sync;
  }

  get version(): number {
    return this.shard.closedSteps;
  }

  get clock(): number {
    return this.released;
  }

  override lastStep(trainerId: number): number {
    const mark = this.shard.marks.lastStep(trainerId);
    return this.open?.has(trainerId) ? Math.max(mark, this.open.step) : mark;
  }

  override holdSteps(): number {
    const open = this.open && this.open.contributors.length > 0 ? this.open : undefined;
    this.closeLimit = open ? open.step : this.shard.closedSteps;
    return this.closeLimit;
  }

  override closeThrough(step: number): Promise<void> {
    this.closeLimit = step;
    this.settle();
    if (this.shard.closedSteps >= step) return Promise.resolve();
    return new Promise((resolve) => this.closedWaiters.push({ step, resolve }));
  }

  protected override get openStep(): number {
    return this.shard.closedSteps + 1;
  }

  /**
   * A push for a later step than the open one waits for the steps before it to close, rather than
   * being refused. Its trainer saw them close on other shards first: a trainer reads only the
   * shards of the tensors it reads, the last contribution here may still be on its way, and a
   * shard restored behind the job closes the steps its trainers finished only as they tell it so
   * (`finished`).
   */
  override async beforePush(trainerId: number, step: number, wait: CallWait): Promise<void> {
    await this.requireMember(trainerId, 'SendGrads');
    this.hooks.beforeWait?.();
    this.finished(trainerId, step - 1, 'SendGrads');
    await this.park(
      step - 1,
      wait,
      `SendGrads for step ${step}`,
      `step ${step - 1} to close`,
      'the shard closed',
    );
  }

  /**
   * A read for `step` waits until step − 1 closed. A read outside a step (step 0: tools,
   * evaluators) never waits. The read also says the trainer finished step − 1.
   */
  override async beforeRead(
    trainerId: number,
    step: number,
    wait: CallWait,
    what: string,
  ): Promise<void> {
    if (!(await this.readInStep(trainerId, step, what))) return;
    await this.park(step - 1, wait, `${what} for step ${step}`, `step ${step - 1} to close`);
  }

  override abandon(err: unknown): void {
    this.unsubscribe();
    super.abandon(err);
    this.open?.discard();
    this.open = undefined;
  }

  /**
   * Under the `rerun` policy a step s still open here is not given up when its trainer says it
   * finished s without a contribution here: it is asked to send its push of s again (its client
   * keeps the push until the next step went through on every shard), so s closes with exactly the
   * contributions it would have had. Only steps before s, which no client holds any more, can be
   * lost (a shard restored from a checkpoint more than one step behind).
   */
  protected override mustResend(last: number, step: number): boolean {
    return this.sync.failover === 'rerun' && last < step && step > this.shard.closedSteps;
  }

  /**
   * A step whose contributions were lost closes without them (`settle`) instead of waiting
   * forever for pushes no trainer sends again.
   */
  protected override marksMoved(): void {
    this.settle();
  }

  /**
   * Adds a push that joins the open step: its gradients are checked as an applied push's are (a
   * non-finite gradient refused or left out per its tensor's policy), its buffers become the
   * step's, and the step closes when the close rule holds.
   */
  protected override join(
    trainerId: number,
    step: number,
    weight: number,
    push: StagedPush,
  ): PushOutcome {
    this.shard.leaveOutCounted(trainerId, step, push);
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
    return { outcome: 'PUSH_OUTCOME_ACCUMULATED', skippedNonFinite, lastStep: step, sparse: [] };
  }

  /**
   * The roster changed: a member that left is waited for no more (the open step may close); one
   * that joined takes its place in the open step's order.
   */
  private rosterChanged(): void {
    for (const member of this.rosterSource.members) this.open?.expect(member);
    this.settle();
  }

  /**
   * Closes the open step while the close rule holds — K contributions arrived, or every roster
   * member either contributed or finished the step already (its contribution was lost with a
   * crash of this shard; a step that lost them all closes applying nothing). A member that left
   * no longer counts; its contribution, if it made one, does. Returns the tensors left out for
   * non-finite means.
   */
  private settle(): string[] {
    const roster = this.rosterSource.members;
    const k = this.sync.replicasToAggregate;
    const skipped: string[] = [];
    // Every trainer left: the open step closes with what it has (the roster shrank to fewer than
    // those who contributed), and no later step opens until one joins.
    const limit = this.closeLimit ?? Infinity;
    if (roster.length === 0)
      return this.open && this.open.step <= limit ? this.close(this.open) : [];
    for (;;) {
      const step = this.shard.closedSteps + 1;
      if (step > limit) break;
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
    const replicated = this.hooks.onClosed?.(
      this.closedStepRecord(open, {
        means: copies.filter(({ tensor }) => !skipped.includes(tensor.name)),
        tables: tables.filter(({ table }) => !skipped.includes(table.table.name)),
        evictions,
      }),
    );
    for (const waiter of [...this.closedWaiters])
      if (waiter.step <= closed) {
        this.closedWaiters.splice(this.closedWaiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    if (!replicated) this.release(closed);
    // A failed forward ends the tenure: the reads waiting are abandoned with it.
    else
      replicated.then(
        () => this.release(closed),
        () => undefined,
      );
    return skipped;
  }

  /**
   * A closed step as its replicas replay it: its means as pieces at offset 0, its tables' rows,
   * the rows their apply evicted, its contributors, and the marks moved before it.
   */
  private closedStepRecord(
    open: OpenStep,
    applied: {
      means: { tensor: TensorSum['tensor']; content: Buffer }[];
      tables: ReturnType<OpenStep['close']>['tables'];
      evictions: TableEvictionIds[];
    },
  ): PushRecord {
    return {
      trainerId: 0,
      step: open.step,
      grads: applied.means.map(({ tensor, content }) => ({
        name: tensor.name,
        elementType: tensor.elementType,
        offset: 0,
        content,
        shape: [...tensor.shape],
      })),
      sparse: applied.tables.map(({ table, ids, grads, counts }) => ({
        table: table.table.name,
        ids: Buffer.from(ids),
        grads: Buffer.from(grads),
        counts: Buffer.from(counts),
      })),
      evictions: applied.evictions.map(({ table, ids }) => ({
        table,
        ids: Buffer.from(ids.buffer, ids.byteOffset, ids.byteLength),
      })),
      closedStep: { contributors: open.contributors },
      marks: this.takeMovedMarks(),
    };
  }

  private release(closed: number): void {
    this.released = Math.max(this.released, closed);
    this.parked.advanced(this.released);
  }
}

/**
 * A push's rows of one table, checked as an applied push's are (lengths, placement, finite values,
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
function copyOf({ tensor, buffer }: TensorSum): { tensor: TensorSum['tensor']; content: Buffer } {
  const { values } = buffer;
  return {
    tensor,
    content: Buffer.from(new Uint8Array(values.buffer, values.byteOffset, values.byteLength)),
  };
}
