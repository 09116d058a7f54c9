/**
 * Who counts for a step in SYNC and SSP. Standalone: the trainers 1..N given by flags
 * (`FixedRoster`). Cluster: the trainers with a live session (`TrainerRoster` in
 * libs/coordination, which watches `trainers/<id>`): one joins when it registers and leaves when
 * its session ends, so no step waits for a trainer that died. Ids come from a counter and are
 * never reused, so members only ever join in ascending order.
 */
export interface Roster {
  /** The members, ascending. */
  readonly members: readonly number[];
  /**
   * Whether members count from the start (mark 0) rather than from their first step on a shard
   * (SSP: a trainer that joins a running job must not pull the clock back to 0).
   */
  readonly countsFromStart: boolean;
  has(trainerId: number): boolean;
  /**
   * Reads the roster again where it is kept (a trainer it has not seen may just have
   * registered) and resolves whether `trainerId` is a member now.
   */
  confirm(trainerId: number): Promise<boolean>;
  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

/** The standalone roster: trainers 1..`trainers`, for the life of the process. */
export class FixedRoster implements Roster {
  readonly members: readonly number[];
  readonly countsFromStart = true;
  private readonly set: ReadonlySet<number>;

  constructor(trainers: number) {
    this.members = Array.from({ length: trainers }, (_, i) => i + 1);
    this.set = new Set(this.members);
  }

  has(trainerId: number): boolean {
    return this.set.has(trainerId);
  }

  confirm(trainerId: number): Promise<boolean> {
    return Promise.resolve(this.has(trainerId));
  }

  subscribe(): () => void {
    return () => undefined;
  }
}

export const noRoster = new FixedRoster(0);
