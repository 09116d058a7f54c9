import type { StepMarks } from './step-marks';

/** A trainer's mark in a group of slices: its last step counted there. */
export interface SliceMark {
  trainerId: number;
  step: number;
  updatedUnixMs: number;
}

/** A group of slices with the marks they hold ahead of the shard's, as checkpoints keep it. */
export interface SliceGroupSnapshot {
  /** Dense tensors and blocks by name (`w`, `w@3`), table buckets as `<table>@<bucket>`. */
  slices: string[];
  marks: SliceMark[];
}

/** Slices that came together (from one shard), and the marks they hold ahead of the shard's. */
interface Group {
  slices: string[];
  /** Trainer → its mark here, only where it is above the shard's own. */
  marks: Map<number, SliceMark>;
}

/**
 * Step marks that some slices of a shard hold ahead of the shard's own (`StepMarks`). Marks are
 * a property of the slices a push changed: when slices come from other shards — a restore onto
 * another shard count, a move — each brings its shard's marks, which can differ for the trainers
 * whose step was in flight (applied on one shard, not yet on another). The shard's own marks then
 * are the lowest (a step above them is applied), and a group of slices whose shard had counted a
 * trainer's later step keeps that mark here: a push of that step leaves those slices out (they
 * have it) and applies the rest — neither lost nor applied twice. Once the trainer's marks move
 * past it on the whole shard its mark ahead goes, and a group no trainer is ahead in is dissolved:
 * without a restore or a move, there is none.
 */
export class MarksAhead {
  private readonly groupOf = new Map<string, Group>();
  /** Trainer → the groups where its mark is ahead. */
  private readonly byTrainer = new Map<number, Set<Group>>();

  /** Whether no slice holds a mark ahead of the shard's. */
  get empty(): boolean {
    return this.byTrainer.size === 0;
  }

  /** Whether some slice holds a mark of `trainerId` ahead of the shard's. */
  has(trainerId: number): boolean {
    return this.byTrainer.has(trainerId);
  }

  /** Whether `slice` counted `trainerId`'s `step` already (its mark there is at least `step`). */
  counted(trainerId: number, step: number, slice: string): boolean {
    const group = this.groupOf.get(slice);
    const mark = group?.marks.get(trainerId);
    return mark !== undefined && mark.step >= step;
  }

  /**
   * Adds a group of slices with its marks; only those above the shard's (`base`) are kept, and a
   * group with none is not kept at all.
   */
  add(group: SliceGroupSnapshot, base: StepMarks): void {
    const marks = new Map<number, SliceMark>();
    for (const mark of group.marks)
      if (mark.step > base.lastStep(mark.trainerId)) marks.set(mark.trainerId, { ...mark });
    if (marks.size === 0) return;
    const added: Group = { slices: [...group.slices], marks };
    for (const slice of added.slices) this.groupOf.set(slice, added);
    for (const trainerId of marks.keys()) this.trainerGroups(trainerId).add(added);
  }

  /**
   * The trainer's mark moved to `step` on the whole shard: its marks ahead at or below it go,
   * and groups no trainer is ahead in any more are dissolved.
   */
  caughtUp(trainerId: number, step: number): void {
    this.dropMarks(trainerId, (mark) => mark.step <= step);
  }

  /** Forgets the marks of trainers silent since `olderThanUnixMs`, as the shard's own are. */
  prune(olderThanUnixMs: number): void {
    for (const trainerId of [...this.byTrainer.keys()])
      this.dropMarks(trainerId, (mark) => mark.updatedUnixMs < olderThanUnixMs);
  }

  /** The groups, for a checkpoint: slices sorted, marks by trainer. */
  entries(): SliceGroupSnapshot[] {
    const groups = [...new Set(this.groupOf.values())].map((group) => ({
      slices: [...group.slices].sort(),
      marks: [...group.marks.values()].sort((a, b) => a.trainerId - b.trainerId),
    }));
    return groups.sort((a, b) => (a.slices[0]! < b.slices[0]! ? -1 : 1));
  }

  /** Drops every group (the shard's state is replaced). */
  clear(): void {
    this.groupOf.clear();
    this.byTrainer.clear();
  }

  private trainerGroups(trainerId: number): Set<Group> {
    let groups = this.byTrainer.get(trainerId);
    if (!groups) this.byTrainer.set(trainerId, (groups = new Set()));
    return groups;
  }

  /** Drops the trainer's marks ahead that `which` picks; a group left with none is dissolved. */
  private dropMarks(trainerId: number, which: (mark: SliceMark) => boolean): void {
    const groups = this.byTrainer.get(trainerId);
    if (!groups) return;
    for (const group of groups) {
      if (!which(group.marks.get(trainerId)!)) continue;
      group.marks.delete(trainerId);
      groups.delete(group);
      if (group.marks.size === 0)
        for (const slice of group.slices)
          if (this.groupOf.get(slice) === group) this.groupOf.delete(slice);
    }
    if (groups.size === 0) this.byTrainer.delete(trainerId);
  }
}
