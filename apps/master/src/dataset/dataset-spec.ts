import type { SetDatasetRequest__Output } from '@pserver/proto';
import { MasterError } from '../service/errors';

/** What the dataset is made of. */
export type DatasetSource =
  | { kind: 'files'; globs: string[]; taskBytes: number }
  | { kind: 'records'; records: number; taskRecords: number };

/** A dataset as SetDataset fixed it: the source, and how tasks are handed out. */
export interface DatasetSpec {
  source: DatasetSource;
  taskTimeoutMs: number;
  maxFailures: number;
}

export const defaultTaskTimeoutMs = 300_000;
export const defaultMaxFailures = 3;
/** More tasks than this would not fit the master's memory comfortably: ask for larger ones. */
export const maxTasks = 20_000_000;
const maxTaskTimeoutMs = 7 * 24 * 3_600_000;
const maxFailuresLimit = 1_000;

/** Checks a SetDataset request; every error names the field and the value. */
export function parseDatasetRequest(request: SetDatasetRequest__Output): DatasetSpec {
  const taskTimeoutMs = request.taskTimeoutMs ?? defaultTaskTimeoutMs;
  if (!Number.isSafeInteger(taskTimeoutMs) || taskTimeoutMs < 1 || taskTimeoutMs > maxTaskTimeoutMs)
    throw invalid(`taskTimeoutMs: must be 1 to ${maxTaskTimeoutMs}, got ${taskTimeoutMs}`);
  const maxFailures = request.maxFailures ?? defaultMaxFailures;
  if (maxFailures > maxFailuresLimit)
    throw invalid(`maxFailures: must be at most ${maxFailuresLimit}, got ${maxFailures}`);
  return { source: parseSource(request), taskTimeoutMs, maxFailures };
}

function parseSource(request: SetDatasetRequest__Output): DatasetSource {
  if (request.source === 'files' && request.files) {
    const { globs, taskBytes } = request.files;
    if (globs.length === 0) throw invalid('files.globs: empty; give at least one glob pattern');
    const empty = globs.find((g) => g.trim() === '');
    if (empty !== undefined) throw invalid('files.globs: an empty pattern');
    if (!Number.isSafeInteger(taskBytes) || taskBytes < 1)
      throw invalid(`files.taskBytes: must be ≥ 1, got ${taskBytes}`);
    return { kind: 'files', globs: [...globs], taskBytes };
  }
  if (request.source === 'records' && request.records) {
    const { records, taskRecords } = request.records;
    if (!Number.isSafeInteger(records) || records < 1)
      throw invalid(`records.records: must be ≥ 1, got ${records}`);
    if (!Number.isSafeInteger(taskRecords) || taskRecords < 1)
      throw invalid(`records.taskRecords: must be ≥ 1, got ${taskRecords}`);
    const tasks = Math.ceil(records / taskRecords);
    if (tasks > maxTasks)
      throw invalid(
        `records.taskRecords: ${taskRecords} makes ${tasks} tasks, more than ${maxTasks}`,
      );
    return { kind: 'records', records, taskRecords };
  }
  throw invalid('source: set files or records');
}

/** Two requests are the same dataset when their specs are equal. */
export function sameSpec(a: DatasetSpec, b: DatasetSpec): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function invalid(message: string): MasterError {
  return new MasterError('MASTER_INVALID_DATASET', `SetDataset: ${message}`);
}
