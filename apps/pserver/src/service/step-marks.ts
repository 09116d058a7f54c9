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

  set(trainerId: number, step: number, nowUnixMs = Date.now()): void {
    this.marks.set(trainerId, { step, updatedUnixMs: nowUnixMs });
  }

  get size(): number {
    return this.marks.size;
  }

  entries(): { trainerId: number; step: number; updatedUnixMs: number }[] {
    return [...this.marks].map(([trainerId, mark]) => ({ trainerId, ...mark }));
  }
}
