import type { CheckpointIndex__Output, FramePlace__Output } from '@pserver/proto';
import type { FramePlace } from './meta';

/** A table frame as the reader met it: where it was, and what the index must say of it. */
export interface PlacedFrame {
  kind: 'record' | 'evictions' | 'rows';
  table: string;
  offset: number;
  length: number;
  rows?: number;
  firstBucket?: number;
  lastBucket?: number;
}

/**
 * What is wrong with a file's index, if anything: it must list every table frame the reader met,
 * in file order, at the place and length it met it, with each table's row sections in ascending
 * bucket order; and it must sit where the meta says. (The CRCs it holds are covered by the file's
 * checksum; a reader of one section checks them.) Returns a reason, or undefined.
 */
export function checkIndex(
  index: CheckpointIndex__Output,
  frames: readonly PlacedFrame[],
  self: { offset: number; length: number },
  expected: FramePlace | undefined,
): string | undefined {
  if (expected && (expected.offset !== self.offset || expected.length !== self.length))
    return `its meta places it at byte ${expected.offset} (${expected.length} bytes)`;
  const listed: PlacedFrame[] = [];
  const place = (p: FramePlace__Output | null) => ({
    offset: Number(p?.offset ?? -1),
    length: Number(p?.length ?? -1),
  });
  for (const table of index.tables) {
    listed.push({ kind: 'record', table: table.table, ...place(table.record) });
    for (const e of table.evictions)
      listed.push({ kind: 'evictions', table: table.table, ...place(e) });
    let previous = 0;
    for (const section of table.sections) {
      if (section.firstBucket > section.lastBucket || section.firstBucket < previous)
        return `table ${table.table}: sections out of bucket order`;
      previous = section.lastBucket;
      listed.push({
        kind: 'rows',
        table: table.table,
        ...place(section.frame),
        rows: Number(section.rows),
        firstBucket: section.firstBucket,
        lastBucket: section.lastBucket,
      });
    }
  }
  if (listed.length !== frames.length)
    return `lists ${listed.length} table frames, the file holds ${frames.length}`;
  for (const [k, frame] of frames.entries()) {
    const entry = listed[k]!;
    for (const key of [
      'kind',
      'table',
      'offset',
      'length',
      'rows',
      'firstBucket',
      'lastBucket',
    ] as const)
      if (entry[key] !== frame[key])
        return `entry ${k} (${entry.kind} of ${entry.table}) says ${key} ${entry[key]}, the file has ${frame[key]}`;
  }
  return undefined;
}
