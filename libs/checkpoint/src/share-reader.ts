import type {
  CheckpointIndex__Output,
  SliceGroupMarks__Output,
  StepMark__Output,
  TableIndex__Output,
  TensorRecord__Output,
} from '@pserver/proto';
import { ChainFileError, readCheckpointChain } from './chain';
import { CheckpointError } from './errors';
import { chainOf, type ChainFile, type CheckpointMeta } from './meta';
import { FrameScratch, PlacedFrames } from './placed-frames';
import { exactHeader, headerProblem, type CheckpointHeader } from './reader';
import { ShareTables, type ShareTable } from './share-tables';

/** Which part of a shard's checkpoint to read: the slices a new shard takes. */
export interface ShareFilter {
  /** Whether the dense tensor or block `name` is wanted. */
  tensor(name: string): boolean;
  /** Whether bucket `bucket` of table `table` is wanted. */
  bucket(table: string, bucket: number): boolean;
}

/** The part of a shard's checkpoint (its whole chain) a filter wants. */
export interface ShardShare {
  /** The last file's header (shard index and count the checkpoint was written at). */
  header: CheckpointHeader;
  /**
   * The wanted tensors, from the chain's last file (tensors are whole in every file), in file
   * order; empty when they were handed to `onTensor` instead.
   */
  tensors: TensorRecord__Output[];
  /** The last file's step marks, closed steps and marks ahead (all of them: the caller decides). */
  marks: StepMark__Output[];
  closedSteps: number;
  ahead: SliceGroupMarks__Output[];
  /**
   * Every table of the chain, in the order the chain first names it: its last record (spec,
   * step, pending admissions: all of them) and the wanted buckets' rows as the chain's end holds
   * them (each delta's evictions, then its rows, applied in order).
   */
  tables: ShareTable[];
  /** Bytes of the files read: how little of them a share needed. */
  bytesRead: number;
}

/**
 * Reads the part of the checkpoint `meta` names (its chain: a full file, then deltas) that
 * `filter` wants: what a new shard takes from an old shard's checkpoint when a job is restored
 * onto another shard count. When every file of the chain has an index and the last file's places
 * its tensors and step marks, only the indexes, the wanted tensor frames, the step marks, each
 * table's record and evictions and the row sections whose bucket range holds a wanted bucket are
 * read, each frame checked against the CRC-32C its index gives it, each index against its meta's.
 * Otherwise (files written before, dense-only files without an index) the chain is read whole and
 * verified (`readCheckpointChain`), with the same result. Throws `ChainFileError` naming the file
 * at fault: CHECKPOINT_CORRUPT for a frame or file that does not verify, CHECKPOINT_INCOMPATIBLE
 * for a file of another shard than the meta's (or a chain that changes shard count).
 */
export async function readShardShare(
  root: string,
  meta: CheckpointMeta,
  filter: ShareFilter,
  /**
   * Takes each wanted tensor as it is read, in file order, instead of `tensors`: its bytes are
   * valid only until the promise it returns settles (they are read into memory the next one
   * reuses).
   */
  onTensor?: (record: TensorRecord__Output) => Promise<void>,
): Promise<ShardShare> {
  if (!onTensor) return readShare(root, meta, filter, undefined);
  const share = await readShare(root, meta, filter, onTensor);
  // A chain read whole holds its tensors: they are handed over now.
  for (const record of share.tensors.splice(0)) await onTensor(record);
  return share;
}

async function readShare(
  root: string,
  meta: CheckpointMeta,
  filter: ShareFilter,
  onTensor: ((record: TensorRecord__Output) => Promise<void>) | undefined,
): Promise<ShardShare> {
  const files = chainOf(meta);
  const last = files[files.length - 1]!;
  if (!files.every((file) => file.indexPlace !== undefined)) return readWhole(root, meta, filter);
  // The last file's index says which way: it places the tensors and marks, or it does not.
  const frames = await inFile(last, () => PlacedFrames.open(root, last));
  let index: CheckpointIndex__Output;
  try {
    index = await inFile(last, () => frames.index());
  } finally {
    await frames.close();
  }
  if (index.stepMarks)
    return readThroughIndexes(root, meta, filter, index, frames.bytesRead, onTensor);
  const whole = await readWhole(root, meta, filter);
  return { ...whole, bytesRead: whole.bytesRead + frames.bytesRead };
}

async function readThroughIndexes(
  root: string,
  meta: CheckpointMeta,
  filter: ShareFilter,
  lastIndex: CheckpointIndex__Output,
  bytesBefore: number,
  onTensor: ((record: TensorRecord__Output) => Promise<void>) | undefined,
): Promise<ShardShare> {
  const files = chainOf(meta);
  const tables = new ShareTables((table, bucket) => filter.bucket(table, bucket));
  const headers = new ChainHeaders(meta);
  let bytesRead = bytesBefore;
  let share: Omit<ShardShare, 'tables' | 'bytesRead'> | undefined;
  for (const [k, file] of files.entries()) {
    const last = k === files.length - 1;
    await inFile(file, async () => {
      const frames = await PlacedFrames.open(root, file);
      try {
        const index = last ? lastIndex : await frames.index();
        const header = headers.check(exactHeader(await frames.header(index.header)), file, k);
        tables.startFile(file.path);
        for (const entry of index.tables) await readTable(frames, entry, tables);
        if (last) share = { header, ...(await readDense(frames, index, filter, onTensor)) };
      } finally {
        bytesRead += frames.bytesRead;
        await frames.close();
      }
    });
  }
  return { ...share!, tables: tables.result(), bytesRead };
}

/** A table's record and evictions, and its row sections that may hold a wanted bucket. */
async function readTable(
  frames: PlacedFrames,
  entry: TableIndex__Output,
  tables: ShareTables,
): Promise<void> {
  const of = `of table ${entry.table}`;
  const record = (await frames.read(entry.record, 'table', `the record ${of}`)).frame.table!;
  if (record.spec?.name !== entry.table)
    throw frames.corrupt(`the index's record ${of} is table ${record.spec?.name}'s`);
  tables.table(record);
  for (const place of entry.evictions)
    tables.evictions(
      (await frames.read(place, 'tableEvictions', `evictions ${of}`)).frame.tableEvictions!,
    );
  for (const section of entry.sections) {
    if (!tables.wantsAny(entry.table, section.firstBucket, section.lastBucket)) continue;
    const rows = (await frames.read(section.frame, 'tableRows', `a row section ${of}`)).frame
      .tableRows!;
    if (
      rows.table !== entry.table ||
      rows.firstBucket !== section.firstBucket ||
      rows.lastBucket !== section.lastBucket ||
      rows.ids.byteLength !== 8 * Number(section.rows)
    )
      throw frames.corrupt(
        `the row section at byte ${Number(section.frame?.offset)} is not the one its index describes`,
      );
    tables.rows(rows);
  }
}

/**
 * The wanted tensors (or each handed to `onTensor`, read into one scratch) and the step marks of
 * the chain's last file.
 */
async function readDense(
  frames: PlacedFrames,
  index: CheckpointIndex__Output,
  filter: ShareFilter,
  onTensor: ((record: TensorRecord__Output) => Promise<void>) | undefined,
): Promise<Pick<ShardShare, 'tensors' | 'marks' | 'closedSteps' | 'ahead'>> {
  const tensors: TensorRecord__Output[] = [];
  const scratch = onTensor && new FrameScratch();
  for (const entry of index.tensors) {
    if (!filter.tensor(entry.name)) continue;
    const { frame } = await frames.read(entry.frame, 'tensor', `tensor ${entry.name}`, scratch);
    const record = frame.tensor!;
    if (record.tensor?.name !== entry.name)
      throw frames.corrupt(`the index's tensor ${entry.name} is ${record.tensor?.name}`);
    if (onTensor) await onTensor(record);
    else tensors.push(record);
  }
  const marks = (await frames.read(index.stepMarks, 'stepMarks', 'the step marks')).frame
    .stepMarks!;
  return { tensors, marks: marks.marks, closedSteps: marks.closedSteps, ahead: marks.ahead };
}

/** The share from a whole, verified read of the chain: for files whose index does not place it. */
async function readWhole(
  root: string,
  meta: CheckpointMeta,
  filter: ShareFilter,
): Promise<ShardShare> {
  const tables = new ShareTables((table, bucket) => filter.bucket(table, bucket));
  const headers = new ChainHeaders(meta);
  const share: Omit<ShardShare, 'tables' | 'bytesRead' | 'header'> & { header?: CheckpointHeader } =
    { tensors: [], marks: [], closedSteps: 0, ahead: [] };
  let position = { file: chainOf(meta)[0]!, index: 0, last: false };
  const read = await readCheckpointChain(root, meta, {
    file: (at) => {
      position = at;
      tables.startFile(at.file.path);
    },
    header: (header) => {
      headers.check(header, position.file, position.index);
      if (position.last) share.header = header;
    },
    tensor: (record) => {
      if (position.last && filter.tensor(record.tensor?.name ?? '')) share.tensors.push(record);
    },
    stepMarks: (marks, closedSteps, ahead) => {
      if (!position.last) return;
      Object.assign(share, { marks, closedSteps, ahead });
    },
    table: (record) => tables.table(record),
    tableEvictions: (evictions) => tables.evictions(evictions),
    tableRows: (rows) => tables.rows(rows),
  });
  return { ...share, header: share.header!, tables: tables.result(), bytesRead: read.bytes };
}

/**
 * The checks of each file's header along a chain, whichever way it is read: readable here, the
 * file its meta names, on the file before it, and of the meta's shard at one shard count.
 */
class ChainHeaders {
  private readonly files: ChainFile[];
  private shardCount: number | undefined;

  constructor(private readonly meta: CheckpointMeta) {
    this.files = chainOf(meta);
  }

  check(header: CheckpointHeader, file: ChainFile, position: number): CheckpointHeader {
    const problem = headerProblem(header);
    if (problem) throw corrupt(file, problem);
    const parent = position === 0 ? '' : this.files[position - 1]!.uuid;
    if (header.uuid !== '' && header.uuid !== file.uuid)
      throw corrupt(file, `is ${header.uuid}, its meta says ${file.uuid}`);
    if (header.parentUuid !== parent)
      throw corrupt(file, `applies on "${header.parentUuid}", its chain puts it on "${parent}"`);
    const count = this.shardCount ?? header.shardCount;
    if (header.shardIndex !== this.meta.index || header.shardCount !== count)
      throw new CheckpointError(
        'CHECKPOINT_INCOMPATIBLE',
        `checkpoint ${file.path} holds shard ${header.shardIndex} of ${header.shardCount}, its chain shard ${this.meta.index} of ${count}`,
      );
    this.shardCount = count;
    return header;
  }
}

/** Runs `work` on `file`, naming it in any checkpoint error (ChainFileError). */
async function inFile<T>(file: ChainFile, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof CheckpointError && !(err instanceof ChainFileError))
      throw new ChainFileError(file, err);
    throw err;
  }
}

function corrupt(file: ChainFile, what: string): CheckpointError {
  return new CheckpointError('CHECKPOINT_CORRUPT', `checkpoint ${file.path}: ${what}`);
}
