import type { DatasetSource } from './dataset-spec';
import { invalid, maxTasks } from './dataset-spec';

/** A file of the dataset, with its size when the dataset was set. */
export interface DatasetFile {
  path: string;
  size: number;
}

/** What one task reads: a byte range of a file, or a range of record indices. */
export type TaskRange =
  | { file: { path: string; start: number; end: number } }
  | { records: { start: number; end: number } };

/**
 * The dataset's tasks, by id: computed from the source and the file list, never stored one by
 * one. Files are cut into byte ranges of `taskBytes` (the last one shorter); a trainer reads the
 * lines that begin in its range, so every line is read by exactly one task.
 */
export class TaskTable {
  /** For file datasets: the id of each file's first task, and the count at the end. */
  private readonly firstTask: number[];

  constructor(
    readonly source: DatasetSource,
    readonly files: DatasetFile[],
  ) {
    this.firstTask = [0];
    if (source.kind === 'files') {
      for (const file of files)
        this.firstTask.push(this.firstTask.at(-1)! + Math.ceil(file.size / source.taskBytes));
    }
    if (this.count === 0) throw invalid('the dataset has no data (every file is empty)');
    if (this.count > maxTasks)
      throw invalid(`it makes ${this.count} tasks, more than ${maxTasks}: use larger tasks`);
  }

  get count(): number {
    const { source } = this;
    return source.kind === 'records'
      ? Math.ceil(source.records / source.taskRecords)
      : this.firstTask.at(-1)!;
  }

  rangeOf(id: number): TaskRange {
    const { source } = this;
    if (source.kind === 'records') {
      const start = id * source.taskRecords;
      return { records: { start, end: Math.min(start + source.taskRecords, source.records) } };
    }
    // The last file whose first task is at or before `id`.
    let lo = 0;
    let hi = this.files.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.firstTask[mid]! <= id) lo = mid;
      else hi = mid - 1;
    }
    const file = this.files[lo]!;
    const start = (id - this.firstTask[lo]!) * source.taskBytes;
    return { file: { path: file.path, start, end: Math.min(start + source.taskBytes, file.size) } };
  }
}
