import fs from 'node:fs/promises';
import type {
  CheckpointHeader__Output,
  SliceGroupMarks__Output,
  StepMark__Output,
  TableEvictions__Output,
  TableRecord__Output,
  TableRows__Output,
  TensorRecord__Output,
} from '@pserver/proto';
import { CheckpointError, ioError } from './errors';
import {
  Checksum,
  checksumAlgorithm,
  decodeFrame,
  formatVersion,
  formatVersionWithTables,
} from './format';
import { checkIndex, type PlacedFrame } from './index-check';
import { readVarint } from './placed-frames';
import type { FramePlace } from './meta';

/** The header, with its nanosecond timestamp exact (a decimal string). */
export type CheckpointHeader = Omit<CheckpointHeader__Output, 'createdUnixNs'> & {
  createdUnixNs: string;
};

export interface CheckpointVisitor {
  header?(header: CheckpointHeader): void;
  /** Called once per record; the record's buffers are its own (they may be kept). */
  tensor?(record: TensorRecord__Output): void;
  /**
   * The marks, in SYNC the steps the shard had closed, and the groups of slices whose marks are
   * ahead of them (a shard restored onto another shard count; empty otherwise).
   */
  stepMarks?(
    marks: StepMark__Output[],
    closedSteps: number,
    ahead: SliceGroupMarks__Output[],
  ): void;
  /** A table's record; its evictions (a delta) and row sections follow, each checked to belong to it. */
  table?(record: TableRecord__Output): void;
  /** A delta's ids evicted since its parent, before the table's rows. */
  tableEvictions?(evictions: TableEvictions__Output): void;
  tableRows?(rows: TableRows__Output): void;
}

export interface ReadResult {
  header: CheckpointHeader;
  records: number;
  size: number;
  /** CRC-32C of the whole file (what the meta records). */
  checksum: string;
}

export interface ReadOptions {
  /**
   * Read every frame into one reused buffer: no allocation per record, but the buffers a visitor
   * gets are valid only during its call (it must copy what it keeps).
   */
  reuseBuffers?: boolean;
}

/** What the meta says the file is; checked before and after reading. */
export interface ExpectedFile {
  size: number;
  checksum: string;
  /** Where its index frame is (files with tables written with one). */
  indexPlace?: FramePlace;
}

const maxVarintBytes = 10;

/**
 * Reads a checkpoint file frame by frame (memory stays near one record), handing each record to
 * the visitor, and verifies it: header first, format version known, checksum and record count as
 * the footer says, nothing after the footer, and size and whole-file checksum as `expected` (the
 * meta) says — with the meta, every byte of the file is covered. Any
 * mismatch throws CHECKPOINT_CORRUPT; the visitor may have seen records of a file that then
 * failed, so callers load into fresh state and keep it only on success.
 */
export async function readCheckpointFile(
  file: string,
  visitor: CheckpointVisitor = {},
  expected?: ExpectedFile,
  options: ReadOptions = {},
): Promise<ReadResult> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (err) {
    throw ioError(`checkpoint ${file}`, err);
  }
  try {
    const { size } = await handle.stat();
    const corrupt = (what: string): CheckpointError =>
      new CheckpointError('CHECKPOINT_CORRUPT', `checkpoint ${file}: ${what}`);
    if (expected && size !== expected.size)
      throw corrupt(`${size} bytes, its meta says ${expected.size}`);
    const checksum = new Checksum();
    let scratch: Buffer | undefined;
    // A fresh buffer per frame, or one buffer reused (it grows to the largest frame).
    const frameBuffer = (bytes: number): Buffer => {
      if (!options.reuseBuffers) return Buffer.allocUnsafe(bytes);
      if (!scratch || scratch.byteLength < bytes) scratch = Buffer.allocUnsafeSlow(bytes);
      return scratch.subarray(0, bytes);
    };
    let position = 0;
    let header: CheckpointHeader | undefined;
    let records = 0;
    // The table frames read so far, by place, and whether the index frame came.
    const placed: PlacedFrame[] = [];
    let indexed = false;
    // The table whose evictions and rows may follow, and how many of each are still to come.
    let table: { name: string; rowsLeft: number; evictedLeft: number } | undefined;
    const endTable = (): void => {
      if (table && table.rowsLeft !== 0)
        throw corrupt(`table ${table.name}: ${table.rowsLeft} of its rows are missing`);
      if (table && table.evictedLeft !== 0)
        throw corrupt(`table ${table.name}: ${table.evictedLeft} of its evicted ids are missing`);
      table = undefined;
    };
    for (;;) {
      if (position >= size) throw corrupt(`ends after ${size} bytes without a footer (truncated)`);
      const lengthBytes = Buffer.alloc(Math.min(maxVarintBytes, size - position));
      await readFully(handle, lengthBytes, position);
      const { value: length, bytes: prefix } = readVarint(lengthBytes);
      if (prefix === 0 || position + prefix + length > size) {
        throw corrupt(
          `a frame at byte ${position} claims ${length} bytes past the end of the file (truncated or corrupt)`,
        );
      }
      const frameBytes = frameBuffer(prefix + length);
      await readFully(handle, frameBytes, position);
      position += frameBytes.byteLength;
      const body = frameBytes.subarray(prefix);
      let frame;
      try {
        frame = decodeFrame(body);
      } catch (err) {
        throw new CheckpointError(
          'CHECKPOINT_CORRUPT',
          `checkpoint ${file}: undecodable frame before byte ${position}`,
          { cause: err },
        );
      }
      if (!header) {
        if (frame.frame !== 'header' || !frame.header)
          throw corrupt('does not start with a header');
        header = exactHeader(body);
        const problem = headerProblem(header);
        if (problem) throw corrupt(problem);
        placed.push({ kind: 'header', offset: 0, length: frameBytes.byteLength });
        checksum.update(frameBytes);
        visitor.header?.(header);
        continue;
      }
      const at = { offset: position - frameBytes.byteLength, length: frameBytes.byteLength };
      if (indexed && frame.frame !== 'footer')
        throw corrupt(`a ${frame.frame} frame after the index`);
      if (frame.frame === 'footer' && frame.footer) {
        endTable();
        if (expected?.indexPlace && !indexed)
          throw corrupt('its meta names an index it does not hold');
        const digest = checksum.digest().toString('hex');
        const stored = frame.footer.checksum.toString('hex');
        if (frame.footer.checksumAlgorithm !== checksumAlgorithm) {
          throw corrupt(
            `checksum algorithm ${frame.footer.checksumAlgorithm} is not one this reader knows`,
          );
        }
        if (stored !== digest)
          throw corrupt(`checksum ${digest} does not match the footer's ${stored}`);
        if (frame.footer.recordCount !== records)
          throw corrupt(`${records} records, the footer says ${frame.footer.recordCount}`);
        if (position !== size) throw corrupt(`${size - position} bytes after the footer`);
        const whole = checksum.fork();
        whole.update(frameBytes);
        const fileChecksum = whole.digest().toString('hex');
        if (expected && fileChecksum !== expected.checksum) {
          throw corrupt(`checksum ${fileChecksum}, its meta says ${expected.checksum}`);
        }
        return { header, records, size, checksum: fileChecksum };
      }
      checksum.update(frameBytes);
      records++;
      if (
        (frame.frame === 'table' || frame.frame === 'tableRows') &&
        header.formatVersion < formatVersionWithTables
      )
        throw corrupt(`a ${frame.frame} frame in a format ${header.formatVersion} file`);
      if (frame.frame === 'table' && frame.table) {
        endTable();
        placed.push({ ...at, kind: 'record', table: frame.table.spec?.name ?? '' });
        if (frame.table.evicted > 0 && header.parentUuid === '')
          throw corrupt(`table ${frame.table.spec?.name}: evicted ids in a full checkpoint`);
        table = {
          name: frame.table.spec?.name ?? '',
          rowsLeft: frame.table.rows,
          evictedLeft: frame.table.evicted,
        };
        visitor.table?.(frame.table);
      } else if (frame.frame === 'tableEvictions' && frame.tableEvictions) {
        const evictions = frame.tableEvictions;
        const n = evictions.ids.byteLength / 8;
        if (!table || evictions.table !== table.name)
          throw corrupt(
            `evictions of table ${evictions.table} without its table record before them`,
          );
        if (!Number.isInteger(n) || n > table.evictedLeft)
          throw corrupt(
            `evictions of table ${evictions.table} before byte ${position}: more ids than its record announced`,
          );
        table.evictedLeft -= n;
        placed.push({ ...at, kind: 'evictions', table: evictions.table });
        visitor.tableEvictions?.(evictions);
      } else if (frame.frame === 'tableRows' && frame.tableRows) {
        const rows = frame.tableRows;
        const n = rows.ids.byteLength / 8;
        if (!table || rows.table !== table.name)
          throw corrupt(`rows of table ${rows.table} without its table record before them`);
        if (table.evictedLeft !== 0)
          throw corrupt(`rows of table ${rows.table} before all of its evicted ids`);
        if (
          !Number.isInteger(n) ||
          rows.values.byteLength !== n * rows.stride * 4 ||
          rows.lastSeen.byteLength !== n * 4 ||
          rows.counts.byteLength !== n * 4 ||
          n > table.rowsLeft
        )
          throw corrupt(
            `rows of table ${rows.table} before byte ${position}: columns of unequal length`,
          );
        table.rowsLeft -= n;
        placed.push({
          ...at,
          kind: 'rows',
          table: rows.table,
          rows: n,
          firstBucket: rows.firstBucket,
          lastBucket: rows.lastBucket,
        });
        visitor.tableRows?.(rows);
      } else if (frame.frame === 'index' && frame.index) {
        endTable();
        const problem = checkIndex(frame.index, placed, at, expected?.indexPlace);
        if (problem) throw corrupt(`index frame at byte ${at.offset}: ${problem}`);
        indexed = true;
      } else if (frame.frame === 'tensor' && frame.tensor) {
        placed.push({ ...at, kind: 'tensor', name: frame.tensor.tensor?.name ?? '' });
        visitor.tensor?.(frame.tensor);
      } else if (frame.frame === 'stepMarks' && frame.stepMarks) {
        placed.push({ ...at, kind: 'marks' });
        visitor.stepMarks?.(
          frame.stepMarks.marks,
          frame.stepMarks.closedSteps,
          frame.stepMarks.ahead,
        );
      } else throw corrupt(`an unexpected ${frame.frame ?? 'empty'} frame before byte ${position}`);
    }
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw ioError(`checkpoint ${file}`, err);
  } finally {
    await handle.close();
  }
}

/** A header frame's message, its nanosecond timestamp exact. */
export function exactHeader(body: Uint8Array): CheckpointHeader {
  const header = decodeFrame(body).header;
  const exact = decodeFrame(body, String).header;
  if (!header || !exact)
    throw new CheckpointError('CHECKPOINT_CORRUPT', 'a header frame without a header');
  return { ...header, createdUnixNs: String(exact.createdUnixNs) };
}

/** What makes a header unreadable here, if anything: its format version, or a delta's parent. */
export function headerProblem(header: CheckpointHeader): string | undefined {
  if (header.formatVersion < 1 || header.formatVersion > formatVersion)
    return `format version ${header.formatVersion} is not one this reader knows (1..${formatVersion})`;
  if ((header.parentUuid !== '') !== (header.formatVersion === formatVersion))
    return `format version ${header.formatVersion} with parent "${header.parentUuid}": only a format ${formatVersion} file is a delta, and it has a parent`;
  return undefined;
}

async function readFully(handle: fs.FileHandle, buffer: Buffer, position: number): Promise<void> {
  let read = 0;
  while (read < buffer.byteLength) {
    const { bytesRead } = await handle.read(
      buffer,
      read,
      buffer.byteLength - read,
      position + read,
    );
    if (bytesRead === 0)
      throw new CheckpointError(
        'CHECKPOINT_CORRUPT',
        `unexpected end of file at byte ${position + read}`,
      );
    read += bytesRead;
  }
}
