import type { JobConsistency } from '@pserver/coordination';
import type { Shard } from '../shard/shard';
import type { Roster } from './roster';
import { ShardConsistency, type CallWait, type ShardConsistencyHooks } from './shard-consistency';

type Ssp = Extract<JobConsistency, { mode: 'ssp' }>;

/**
 * Bounded staleness (SSP): pushes apply on arrival, and a read for step s waits until every
 * roster member reached step s − 1 − staleness. The clock is the slowest member's mark; a member
 * counts from its first step on this shard (standalone members from the start), so one that
 * joins a running job does not pull the clock back to 0.
 */
export class SspConsistency extends ShardConsistency {
  private readonly unsubscribe: () => void;

  constructor(config: Ssp, roster: Roster, shard: Shard, hooks: ShardConsistencyHooks = {}) {
    super(config, roster, shard, hooks);
    if (roster.countsFromStart)
      for (const member of roster.members) if (!shard.marks.has(member)) shard.marks.set(member, 0);
    // A member that left is waited for no more: the clock may move.
    this.unsubscribe = roster.subscribe(() => this.marksMoved());
  }

  private get staleness(): number {
    return (this.config as Ssp).staleness;
  }

  get version(): number {
    return this.shard.appliedSeq;
  }

  get clock(): number {
    let min = Infinity;
    for (const member of this.rosterSource.members)
      if (this.shard.marks.has(member)) min = Math.min(min, this.shard.marks.lastStep(member));
    return min === Infinity ? 0 : min;
  }

  override async beforePush(trainerId: number, _step: number, _wait: CallWait): Promise<void> {
    await this.requireMember(trainerId, 'SendGrads');
  }

  /**
   * Waits until every roster member reached step − 1 − staleness. A read outside a step (step 0:
   * tools, evaluators) never waits. The read also says the trainer finished step − 1.
   */
  override async beforeRead(
    trainerId: number,
    step: number,
    wait: CallWait,
    what: string,
  ): Promise<void> {
    if (!(await this.readInStep(trainerId, step, what))) return;
    const needed = step - 1 - this.staleness;
    await this.park(
      needed,
      wait,
      `${what} for step ${step}`,
      `every trainer of the roster to reach step ${needed}`,
    );
  }

  override abandon(err: unknown): void {
    this.unsubscribe();
    super.abandon(err);
  }

  protected override afterApply(): void {
    this.parked.advanced(this.clock);
  }

  /** Angel's clock adjustment: a mark moved forward may move the slowest clock. */
  protected override marksMoved(): void {
    this.parked.advanced(this.clock);
  }
}
