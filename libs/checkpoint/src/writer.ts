import fs from 'node:fs/promises';
import path from 'node:path';
import { CheckpointError, ioError } from './errors';
import {
  Checksum,
  checksumAlgorithm,
  encodeFrame,
  formatVersion,
  formatVersionWithoutTables,
  formatVersionWithTables,
} from './format';
import { encodeTensorFrame } from './record-encoding';
import { fsyncDirectory } from './fs-sync';
import type { FramePlace } from './meta';
import type { ShardSnapshot } from './snapshot';
import type { WritePointHook } from './write-points';

export interface WrittenFile {
  /** Relative to the checkpoint directory. */
  path: string;
  size: number;
  /** CRC-32C of the whole file, 8 hex digits (what the meta records). */
  checksum: string;
  /** The format version written (what the meta records). */
  formatVersion: number;
  /** Where the index frame is (files with tables; what the meta records). */
  indexPlace?: FramePlace;
}

export interface WriteOptions {
  /** The checkpoint directory. */
  root: string;
  /** The file's path relative to `root`, e.g. `shard-0/e7-s3-<uuid>.ckpt`. */
  path: string;
  hook?: WritePointHook;
  /**
   * False for a file read once and deleted (a copy streamed to a replica or a live move's
   * receiver): no fsync of the file or its directory, which only a crash would need.
   */
  durable?: boolean;
}

/**
 * Writes a snapshot as a checkpoint file, crash-safely: to `<path>.tmp`, frame by frame (memory
 * beyond the snapshot stays near one record), fsync, rename, fsync the directory. A failure
 * removes the temporary file; a failed fsync is never retried on the same file (the page cache
 * may have dropped the dirty pages it reported), the next checkpoint writes a new one.
 * Committing the meta is the caller's next step; until then the file is not a checkpoint.
 */
export async function writeCheckpointFile(
  snapshot: ShardSnapshot,
  options: WriteOptions,
): Promise<WrittenFile> {
  const hook = options.hook ?? (() => undefined);
  const final = path.join(options.root, options.path);
  const tmp = `${final}.tmp`;
  await hook('before-tmp-write');
  let handle: fs.FileHandle;
  try {
    await fs.mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
    handle = await fs.open(tmp, 'wx', 0o600);
  } catch (err) {
    throw ioError(`checkpoint ${options.path}`, err);
  }
  let size = 0;
  const checksum = new Checksum();
  // One write in flight while the checksum of the next frame is computed: the CRC (on this
  // thread) and the disk (in libuv's threads) overlap. Chunks stay valid until the write ends:
  // they are the snapshot's buffers.
  let inFlight: Promise<void> = Promise.resolve();
  // Where the next frame starts: known before its bytes reach the disk.
  let offset = 0;
  const send = async (chunks: Uint8Array[]): Promise<void> => {
    await inFlight;
    inFlight = writeAll(handle, chunks).then((bytes) => {
      size += bytes;
    });
  };
  const write = async (chunks: Uint8Array[]): Promise<void> => {
    for (const chunk of chunks) {
      checksum.update(chunk);
      offset += chunk.byteLength;
    }
    await send(chunks);
  };
  // A frame written where the index can find it: its place, with its own CRC. The file's CRC
  // continues from the frame's (crc32cCombine), so its bytes are checksummed once.
  const placed = async (chunks: Uint8Array[]): Promise<FramePlace> => {
    const crc = new Checksum();
    let length = 0;
    for (const chunk of chunks) {
      crc.update(chunk);
      length += chunk.byteLength;
    }
    checksum.append(crc, length);
    const place = { offset, length, checksum: crc.digest().toString('hex') };
    offset += length;
    await send(chunks);
    return place;
  };
  const tables = snapshot.tables ?? [];
  const delta = snapshot.parentUuid !== undefined;
  const version = delta
    ? formatVersion
    : tables.length > 0
      ? formatVersionWithTables
      : formatVersionWithoutTables;
  // Files with tables have an index, which places every frame but the footer; the others have
  // none (a dense shard is read whole), and their frames need no CRC of their own.
  const indexed = tables.length > 0;
  const frame = async (chunks: Uint8Array[]): Promise<FramePlace | undefined> => {
    if (indexed) return placed(chunks);
    await write(chunks);
    return undefined;
  };
  try {
    const header = await frame([
      encodeFrame({
        header: {
          formatVersion: version,
          shardIndex: snapshot.index,
          shardCount: snapshot.shardCount,
          shardEpoch: snapshot.shardEpoch,
          createdUnixNs: snapshot.createdUnixNs,
          blockSize: snapshot.blockSize,
          job: snapshot.job,
          seq: snapshot.seq,
          uuid: snapshot.uuid,
          ...(delta && { parentUuid: snapshot.parentUuid }),
        },
      }),
    ]);
    let records = 0;
    const half = Math.floor(snapshot.tensors.length / 2);
    const tensorPlaces: { name: string; frame: FramePlace }[] = [];
    for (const tensor of snapshot.tensors) {
      // The snapshot's buffers go to the file as they are: no copy per record.
      const place = await frame(encodeTensorFrame(tensor));
      if (place) tensorPlaces.push({ name: tensor.tensor.name, frame: place });
      if (++records === half) await hook('mid-write');
    }
    if (half === 0) await hook('mid-write');
    const record = async (bytes: Uint8Array): Promise<FramePlace> => {
      records++;
      return placed([bytes]);
    };
    const index: TableIndex[] = [];
    for (const table of tables) {
      const rows = table.rows;
      let written = 0;
      const evicted = delta ? (table.evictedIds ?? new Uint8Array()) : new Uint8Array();
      const tableRecord = await record(
        encodeFrame({
          table: {
            spec: table.spec,
            step: table.step,
            rows,
            pendingIds: table.pendingIds,
            pendingCounts: table.pendingCounts,
            ...(delta && { evicted: evicted.byteLength / 8 }),
          },
        }),
      );
      const entry: TableIndex = {
        table: table.spec.name,
        record: tableRecord,
        evictions: [],
        sections: [],
      };
      index.push(entry);
      for (let at = 0; at < evicted.byteLength; at += evictionFrameBytes) {
        const ids = evicted.subarray(at, at + evictionFrameBytes);
        entry.evictions.push(
          await record(encodeFrame({ tableEvictions: { table: table.spec.name, ids } })),
        );
      }
      for (const section of table.sections) {
        const rowsFrame = await record(
          encodeFrame({
            tableRows: {
              table: table.spec.name,
              stride: table.stride,
              ids: section.ids,
              values: section.values,
              lastSeen: section.lastSeen,
              counts: section.counts,
              firstBucket: section.firstBucket,
              lastBucket: section.lastBucket,
            },
          }),
        );
        entry.sections.push({
          frame: rowsFrame,
          firstBucket: section.firstBucket,
          lastBucket: section.lastBucket,
          rows: section.lastSeen.byteLength / 4,
        });
        written += section.lastSeen.byteLength / 4;
      }
      // A file whose record announced other rows than follow would read back as corrupt.
      if (written !== rows)
        throw new Error(`table ${table.spec.name}: ${written} rows written, ${rows} announced`);
    }
    const stepMarks = await frame([
      encodeFrame({
        stepMarks: {
          marks: snapshot.marks.map((m) => ({
            trainerId: m.trainerId,
            step: m.step,
            updatedUnixMs: m.updatedUnixMs,
          })),
          closedSteps: snapshot.closedSteps ?? 0,
          ahead: (snapshot.marksAhead ?? []).map((group) => ({
            slices: group.slices,
            marks: group.marks.map((m) => ({
              trainerId: m.trainerId,
              step: m.step,
              updatedUnixMs: m.updatedUnixMs,
            })),
          })),
        },
      }),
    ]);
    records++;
    const indexPlace = indexed
      ? await record(
          encodeFrame({
            index: {
              tables: index.map(toProto),
              tensors: tensorPlaces.map((t) => ({ name: t.name, frame: toProtoPlace(t.frame) })),
              stepMarks: toProtoPlace(stepMarks!),
              header: toProtoPlace(header!),
            },
          }),
        )
      : undefined;
    // The footer's checksum covers the bytes before it; the file's (in the meta) covers it too.
    const footer = encodeFrame({
      footer: {
        recordCount: records,
        checksumAlgorithm,
        checksum: checksum.digest(),
      },
    });
    await write([footer]);
    await inFlight;
    const durable = options.durable ?? true;
    await hook('after-write-before-fsync');
    if (durable) await handle.sync();
    await handle.close();
    await hook('after-fsync-before-rename');
    await fs.rename(tmp, final);
    await hook('after-rename-before-dir-fsync');
    if (durable) await fsyncDirectory(path.dirname(final));
    return {
      path: options.path,
      size,
      checksum: checksum.digest().toString('hex'),
      formatVersion: version,
      ...(indexPlace && { indexPlace }),
    };
  } catch (err) {
    await inFlight.catch(() => undefined);
    await handle.close().catch(() => undefined);
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    if (err instanceof CheckpointError) throw err;
    throw ioError(`checkpoint ${options.path}`, err);
  }
}

interface TableIndex {
  table: string;
  record: FramePlace;
  evictions: FramePlace[];
  sections: { frame: FramePlace; firstBucket: number; lastBucket: number; rows: number }[];
}

function toProto(entry: TableIndex) {
  return {
    table: entry.table,
    record: toProtoPlace(entry.record),
    evictions: entry.evictions.map(toProtoPlace),
    sections: entry.sections.map((s) => ({ ...s, frame: toProtoPlace(s.frame) })),
  };
}

function toProtoPlace(place: FramePlace) {
  return { ...place, checksum: Buffer.from(place.checksum, 'hex') };
}

/** Evicted ids per frame: 4 M ids, 32 MiB, far from protobuf's limits. */
const evictionFrameBytes = 32 * 1024 * 1024;

/** Writes every chunk, in order, however many partial writes it takes; returns the bytes. */
async function writeAll(handle: fs.FileHandle, chunks: Uint8Array[]): Promise<number> {
  const total = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);
  let pending = chunks;
  let written = 0;
  while (written < total) {
    const { bytesWritten } = await handle.writev(pending);
    written += bytesWritten;
    let skip = bytesWritten;
    const rest: Uint8Array[] = [];
    for (const chunk of pending) {
      if (skip >= chunk.byteLength) skip -= chunk.byteLength;
      else {
        rest.push(skip > 0 ? chunk.subarray(skip) : chunk);
        skip = 0;
      }
    }
    pending = rest;
  }
  return total;
}
