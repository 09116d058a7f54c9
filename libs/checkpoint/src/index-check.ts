import type { CheckpointIndex__Output, FramePlace__Output } from '@pserver/proto';
import type { FramePlace } from './meta';

/** A frame as the reader met it: where it was, and what the index must say of it. */
export type PlacedFrame = TableFrame | DenseFrame;

/** A table's record, evictions or row section. */
export interface TableFrame {
  kind: 'record' | 'evictions' | 'rows';
  table: string;
  offset: number;
  length: number;
  rows?: number;
  firstBucket?: number;
  lastBucket?: number;
}

/** The header, a tensor record (`name`: the tensor or block) or the step marks. */
export interface DenseFrame {
  kind: 'header' | 'tensor' | 'marks';
  name?: string;
  offset: number;
  length: number;
}

/**
 * What is wrong with a file's index, if anything: it must list every table frame the reader met,
 * in file order, at the place and length it met it, with each table's row sections in ascending
 * bucket order; when it places the step marks (files written since the index placed them), it
 * must also place the header and list every tensor record in file order, each at its place, and
 * the marks at theirs (an index without them, written before, is valid); and it must sit where
 * the meta says. (The CRCs it holds are covered by the file's checksum; a reader of one frame
 * checks them.) Returns a reason, or undefined.
 */
export function checkIndex(
  index: CheckpointIndex__Output,
  frames: readonly PlacedFrame[],
  self: { offset: number; length: number },
  expected: FramePlace | undefined,
): string | undefined {
  if (expected && (expected.offset !== self.offset || expected.length !== self.length))
    return `its meta places it at byte ${expected.offset} (${expected.length} bytes)`;
  const tableFrames = frames.filter(isTableFrame);
  const denseFrames = frames.filter((f): f is DenseFrame => !isTableFrame(f));
  return checkTables(index, tableFrames) ?? checkDense(index, denseFrames);
}

function isTableFrame(frame: PlacedFrame): frame is TableFrame {
  return frame.kind === 'record' || frame.kind === 'evictions' || frame.kind === 'rows';
}

function placeOf(p: FramePlace__Output | null) {
  return { offset: Number(p?.offset ?? -1), length: Number(p?.length ?? -1) };
}

function checkTables(
  index: CheckpointIndex__Output,
  frames: readonly TableFrame[],
): string | undefined {
  const listed: TableFrame[] = [];
  for (const table of index.tables) {
    listed.push({ kind: 'record', table: table.table, ...placeOf(table.record) });
    for (const e of table.evictions)
      listed.push({ kind: 'evictions', table: table.table, ...placeOf(e) });
    let previous = 0;
    for (const section of table.sections) {
      if (section.firstBucket > section.lastBucket || section.firstBucket < previous)
        return `table ${table.table}: sections out of bucket order`;
      previous = section.lastBucket;
      listed.push({
        kind: 'rows',
        table: table.table,
        ...placeOf(section.frame),
        rows: Number(section.rows),
        firstBucket: section.firstBucket,
        lastBucket: section.lastBucket,
      });
    }
  }
  if (listed.length !== frames.length)
    return `lists ${listed.length} table frames, the file holds ${frames.length}`;
  return firstDifference(listed, frames, [
    'kind',
    'table',
    'offset',
    'length',
    'rows',
    'firstBucket',
    'lastBucket',
  ]);
}

function checkDense(
  index: CheckpointIndex__Output,
  frames: readonly DenseFrame[],
): string | undefined {
  if (!index.stepMarks) {
    // Written before the index placed the dense frames: nothing else may be placed then.
    if (index.header || index.tensors.length > 0)
      return 'places the header or tensors without the step marks';
    return undefined;
  }
  if (!index.header) return 'places the step marks without the header';
  const listed: DenseFrame[] = [
    { kind: 'header', ...placeOf(index.header) },
    ...index.tensors.map((t) => ({ kind: 'tensor' as const, name: t.name, ...placeOf(t.frame) })),
    { kind: 'marks', ...placeOf(index.stepMarks) },
  ];
  const tensors = frames.filter((f) => f.kind === 'tensor').length;
  if (listed.length !== frames.length)
    return `lists ${listed.length} header, tensor and marks frames (${index.tensors.length} tensors), the file holds ${frames.length} (${tensors} tensors)`;
  return firstDifference(listed, frames, ['kind', 'name', 'offset', 'length']);
}

/** The first entry where the index and the file disagree, said as the index's entry. */
function firstDifference<T extends PlacedFrame>(
  listed: readonly T[],
  frames: readonly T[],
  keys: readonly (keyof T & string)[],
): string | undefined {
  for (const [k, frame] of frames.entries()) {
    const entry = listed[k]!;
    for (const key of keys)
      if (entry[key] !== frame[key])
        return `entry ${k} (${describe(entry)}) says ${key} ${String(entry[key])}, the file has ${String(frame[key])}`;
  }
  return undefined;
}

function describe(entry: PlacedFrame): string {
  if (isTableFrame(entry)) return `${entry.kind} of ${entry.table}`;
  return entry.kind === 'tensor' ? `tensor ${entry.name}` : entry.kind;
}
