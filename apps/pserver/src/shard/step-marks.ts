/**
 * The last step of each trainer applied to this shard: a push whose step is not above its
 * trainer's mark is a duplicate (a retry of a push already applied). Marks are part of the
 * checkpoint, so deduplication survives a restart.
 */
export class StepMarks {
  private readonly marks = new Map<number, { step: number; updatedUnixMs: number }>();

  lastStep(trainerId: number): number {
    return this.marks.get(trainerId)?.step ?? 0;
  }

  /** Whether the trainer has a mark here (it stepped on this shard, or counts from the start). */
  has(trainerId: number): boolean {
    return this.marks.has(trainerId);
  }

  set(trainerId: number, step: number, nowUnixMs = Date.now()): void {
    this.marks.set(trainerId, { step, updatedUnixMs: nowUnixMs });
  }

  get size(): number {
    return this.marks.size;
  }

  entries(): { trainerId: number; step: number; updatedUnixMs: number }[] {
    return [...this.marks].map(([trainerId, mark]) => ({ trainerId, ...mark }));
  }

  /**
   * Forgets the marks of trainers that pushed nothing since `olderThanUnixMs` (trainers gone for a
   * long time). Ids are never reused, so no live trainer can collide with a forgotten mark; only a
   * retry delayed beyond the retention would be applied again.
   */
  prune(olderThanUnixMs: number): number {
    let pruned = 0;
    for (const [trainerId, mark] of this.marks) {
      if (mark.updatedUnixMs < olderThanUnixMs) {
        this.marks.delete(trainerId);
        pruned++;
      }
    }
    return pruned;
  }
}
