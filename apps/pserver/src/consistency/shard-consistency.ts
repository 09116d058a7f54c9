import { TenureLostError, type JobConsistency } from '@pserver/coordination';
import { PserverError } from '../shard/errors';
import { fateOf, type PushFate, type SettledFate } from '../shard/push-fate';
import type { PushRecord } from '../shard/push-record';
import type { AppliedPush, Shard, SparseOutcome } from '../shard/shard';
import type { StagedPush } from '../shard/staged-push';
import { ParkedCalls } from './parked-calls';
import type { Roster } from './roster';

/** What a push came to, as its reply says it. */
export interface PushOutcome {
  outcome:
    | 'PUSH_OUTCOME_APPLIED'
    | 'PUSH_OUTCOME_ACCUMULATED'
    | 'PUSH_OUTCOME_DUPLICATE'
    | 'PUSH_OUTCOME_DROPPED_LATE';
  /** Gradients left out for NaN or ±Infinity (skip policy), and SYNC means that overflowed. */
  skippedNonFinite: string[];
  /** The trainer's last step counted on the shard after this push. */
  lastStep: number;
  sparse: SparseOutcome[];
  /** Applied now: what the apply did (a primary forwards its evictions). */
  applied?: AppliedPush;
}

/**
 * A SYNC step closed without the contributions of `trainers`: they had finished it (their pushes
 * to it were acknowledged) before this shard was restored from a checkpoint, so they were lost.
 */
export interface LostContributions {
  step: number;
  trainers: number[];
}

/** A step mark moved without anything applied (a trainer said it finished a step). */
export interface MovedMark {
  trainerId: number;
  step: number;
  updatedUnixMs: number;
}

/** How long a call may wait: its signal and its deadline (ms since the epoch). */
export interface CallWait {
  signal: AbortSignal;
  deadline: number;
}

export interface ShardConsistencyHooks {
  /** Told when a SYNC step closes without contributions lost with a crash. */
  onLost?: (lost: LostContributions) => void;
  /**
   * A primary with replicas: forwards a closed SYNC step; reads of the next step wait until it
   * resolves, so no trainer reads a step its replicas do not hold. Marks moved without anything
   * applied travel with the next forward (`takeMovedMarks`); their presence is also what makes
   * the consistency keep them.
   */
  onClosed?: (record: PushRecord) => Promise<void>;
  /**
   * Throws when a wait begun now would never end (the shard is stopping, or its tenure ended):
   * called before a call parks.
   */
  beforeWait?: () => void;
}

/**
 * The job's consistency mode acting on one shard (`consistencyFor` picks it): who counts (the
 * roster), what a push comes to (`classify`, then `accept`), and when a read or a push may go
 * (parked until the clock it needs). Everything here runs synchronously between awaits, so a read
 * copied right after `beforeRead` resolves sees whole steps.
 *
 * The shard's clock: in SYNC the steps closed; in SSP the smallest step of the roster's marks (a
 * mark is the member's last step applied here). ASYNC has none and never parks.
 *
 * The roster may change while the shard serves (cluster jobs: trainers register and their
 * sessions end): a member that leaves is no longer waited for, one that joins is waited for from
 * the open step on (SSP: from its first step on this shard).
 */
export abstract class ShardConsistency {
  readonly parked = new ParkedCalls();
  /** Marks moved since the last forward (a primary with replicas). */
  private moved: MovedMark[] = [];

  protected constructor(
    readonly config: JobConsistency,
    readonly rosterSource: Roster,
    protected readonly shard: Shard,
    protected readonly hooks: ShardConsistencyHooks,
  ) {}

  /** In SYNC the steps closed; otherwise the pushes applied since the shard's state began. */
  abstract get version(): number;

  /** Every roster member's steps up to this one are in the shard's values (0 in ASYNC). */
  abstract get clock(): number;

  /** Who counts (none in ASYNC). */
  get roster(): readonly number[] {
    return this.rosterSource.members;
  }

  /** The trainer's last step counted here: applied (SYNC: or contributed to the open step). */
  lastStep(trainerId: number): number {
    return this.shard.marks.lastStep(trainerId);
  }

  /**
   * A live change of the count: closes no step after the highest a push joined here, and returns
   * it, until `closeThrough` says which step the shards agreed on. Undefined where pushes apply on
   * arrival: there is nothing to agree on.
   */
  holdSteps(): number | undefined {
    return undefined;
  }

  /** Closes the steps through `step` as their contributions come, and no later one; resolves once `step` closed. */
  closeThrough(_step: number): Promise<void> {
    return Promise.resolve();
  }

  /** The open SYNC step; undefined where pushes apply on arrival. */
  protected get openStep(): number | undefined {
    return undefined;
  }

  /**
   * What a push of `trainerId` for `step` comes to now (`fateOf`): classified before anything is
   * staged, and again by `accept` (a streamed push may have become a duplicate or late while it
   * arrived).
   */
  classify(trainerId: number, step: number): PushFate {
    return fateOf(step, this.lastStep(trainerId), this.openStep);
  }

  /**
   * Takes a staged, checked push in: applied now, joined to the open step, or answered as a
   * duplicate or late. The caller requires its tenure right before, with no await in between.
   */
  accept(trainerId: number, step: number, weight: number, push: StagedPush): PushOutcome {
    const fate = this.classify(trainerId, step);
    switch (fate.kind) {
      case 'apply': {
        const applied = this.shard.applyPush(trainerId, step, push);
        this.afterApply();
        const { skippedNonFinite, sparse } = applied;
        return {
          outcome: 'PUSH_OUTCOME_APPLIED',
          skippedNonFinite,
          lastStep: step,
          sparse,
          applied,
        };
      }
      case 'join':
        return this.join(trainerId, step, weight, push);
      default:
        return settledOutcome(fate);
    }
  }

  /** Waits, where the mode says so, until a push for `step` may be classified. */
  beforePush(_trainerId: number, _step: number, _wait: CallWait): Promise<void> {
    return Promise.resolve();
  }

  /** Waits, where the mode says so, until a read for `step` may copy the shard's values. */
  beforeRead(_trainerId: number, _step: number, _wait: CallWait, _what: string): Promise<void> {
    return Promise.resolve();
  }

  /** The marks moved since the last forward, for the next one (a primary with replicas). */
  takeMovedMarks(): MovedMark[] {
    const moved = this.moved;
    this.moved = [];
    return moved;
  }

  /** The shard stops serving: parked calls fail with `err`, what the mode holds is dropped. */
  abandon(err: unknown): void {
    this.parked.abandon(err);
  }

  /** SYNC: adds a push to the open step. */
  protected join(trainerId: number, step: number, _weight: number, _push: StagedPush): PushOutcome {
    throw new Error(`trainer ${trainerId} step ${step}: no open step in ${this.config.mode}`);
  }

  /** After a push was applied: calls waiting for the clock may go. */
  protected afterApply(): void {
    // ASYNC and SYNC: nothing waits for an applied push.
  }

  /**
   * SYNC and SSP count only the roster's trainers: others are refused PSERVER_NOT_IN_ROSTER. A
   * trainer the roster has not seen is looked up where the roster is kept first: it may have
   * registered an instant ago.
   */
  protected async requireMember(trainerId: number, what: string): Promise<void> {
    if (this.rosterSource.has(trainerId)) return;
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
   * SSP and SYNC: a read for `step` by a roster member, which also says the trainer finished
   * step − 1 (`finished`). False for a read outside a step (step 0: tools, evaluators), which
   * never waits.
   */
  protected async readInStep(trainerId: number, step: number, what: string): Promise<boolean> {
    this.hooks.beforeWait?.();
    if (step === 0) return false;
    await this.requireMember(trainerId, what);
    this.finished(trainerId, step - 1, what);
    return true;
  }

  /**
   * A read or push of step s + 1 says its trainer finished step s everywhere: the client starts a
   * step only after every push of the step before was acknowledged. Its mark moves to s if it was
   * behind, which is where a shard restored from an older checkpoint, or a replica promoted
   * without the open step's contributions, learns what the trainers did since (`marksMoved`).
   * When the mode asks for the step again (`mustResend`), the mark stops at s − 1 and the call is
   * refused PSERVER_RESEND_STEP.
   */
  protected finished(trainerId: number, step: number, what: string): void {
    const last = this.lastStep(trainerId);
    if (last >= step && this.shard.marks.has(trainerId)) return;
    const resend = this.mustResend(last, step);
    const mark = resend ? step - 1 : step;
    if (mark > this.shard.marks.lastStep(trainerId) || !this.shard.marks.has(trainerId)) {
      const now = Date.now();
      this.shard.markStep(trainerId, mark, now);
      if (this.hooks.onClosed) this.moved.push({ trainerId, step: mark, updatedUnixMs: now });
      this.marksMoved();
    }
    if (resend)
      throw new PserverError(
        'PSERVER_RESEND_STEP',
        `${what} for step ${step + 1}: this shard holds no contribution of trainer ${trainerId} to step ${step}, which is open here (it was lost with a failover): send the push of step ${step} again, then retry`,
      );
  }

  /** Whether a trainer whose last step here is `last` must send its push of `step` again. */
  protected mustResend(_last: number, _step: number): boolean {
    return false;
  }

  /** Marks moved without a push applied: the clock may have moved. */
  protected marksMoved(): void {
    // ASYNC: no clock to move.
  }

  /**
   * Parks until the clock reaches `needed`; a wait that ends at its deadline or is cancelled is
   * answered DEADLINE_EXCEEDED or CANCELLED, the message naming what it waited for and, for a
   * deadline, where the clock stood (`clockSays` the clock).
   */
  protected async park(
    needed: number,
    wait: CallWait,
    what: string,
    waitingFor: string,
    clockSays = 'the shard is at',
  ): Promise<void> {
    try {
      await this.parked.wait(needed, () => this.clock, wait.signal);
    } catch (err) {
      if (err instanceof PserverError || err instanceof TenureLostError) throw err;
      throw Date.now() >= wait.deadline
        ? new PserverError(
            'DEADLINE_EXCEEDED',
            `${what}: waited for ${waitingFor} until the deadline (${clockSays} ${this.clock})`,
          )
        : new PserverError('CANCELLED', `${what}: cancelled while waiting for ${waitingFor}`);
    }
  }
}

/** A duplicate's or a late push's answer: nothing applied. */
export function settledOutcome(fate: SettledFate): PushOutcome {
  return {
    outcome: fate.kind === 'duplicate' ? 'PUSH_OUTCOME_DUPLICATE' : 'PUSH_OUTCOME_DROPPED_LATE',
    skippedNonFinite: [],
    lastStep: fate.lastStep,
    sparse: [],
  };
}

function describeRoster(roster: readonly number[]): string {
  return roster.length <= 8
    ? `trainers ${roster.join(', ')}`
    : `${roster.length} trainers, ${roster[0]}..${roster.at(-1)}`;
}
