import fs from 'node:fs/promises';
import path from 'node:path';
import { bucketsOfIds } from '@pserver/proto';
import type { TableRecord__Output } from '@pserver/proto';
import { CheckpointError, ioError } from './errors';
import { Checksum, decodeFrame } from './format';
import { chainOf, type ChainFile, type CheckpointMeta, type FramePlace } from './meta';

/** One file's part of a bucket: the table's record, and the ids and rows of that bucket. */
export interface BucketPart {
  file: ChainFile;
  record: TableRecord__Output;
  /** A delta's ids of the bucket evicted since its parent, int64 LE. */
  evictedIds: Uint8Array;
  /** The bucket's rows in the file, parallel columns as in `TableRows`. */
  rows: { ids: Uint8Array; values: Uint8Array; lastSeen: Uint8Array; counts: Uint8Array };
  stride: number;
}

/**
 * Reads one bucket of one table from a checkpoint without a scan: for each file of the meta's
 * chain (its full checkpoint, then each delta), the index frame at the place the meta records,
 * then only the table's record, its evictions and the row sections whose bucket range holds the
 * bucket — each frame checked against the CRC-32C the index gives it, the index against the
 * meta's. Applying the parts in order (evictions, then rows) gives the bucket as the chain's end
 * holds it. `bytesRead` says how little of the files was read.
 */
export async function readTableBucket(
  root: string,
  meta: CheckpointMeta,
  table: string,
  bucket: number,
): Promise<{ parts: BucketPart[]; bytesRead: number }> {
  const parts: BucketPart[] = [];
  let bytesRead = 0;
  for (const file of chainOf(meta)) {
    if (!file.indexPlace)
      throw new CheckpointError('CHECKPOINT_INCOMPATIBLE', `checkpoint ${file.path} has no index`);
    const handle = await open(path.join(root, file.path));
    try {
      const read = async (place: FramePlace) => {
        bytesRead += place.length;
        return readPlaced(handle, file.path, place);
      };
      const index = (await read(file.indexPlace)).index;
      const entry = index?.tables.find((t) => t.table === table);
      if (!entry)
        throw new CheckpointError(
          'CHECKPOINT_CORRUPT',
          `checkpoint ${file.path}: no table ${table}`,
        );
      const record = (await read(toPlace(entry.record))).table!;
      const buckets = record.spec?.buckets ?? 0;
      const inBucket = (ids: Uint8Array): Uint32Array => bucketsOfIds(ids, buckets);
      const evicted: Uint8Array[] = [];
      for (const place of entry.evictions) {
        const ids = (await read(toPlace(place))).tableEvictions!.ids;
        const of = inBucket(ids);
        for (let k = 0; k < of.length; k++)
          if (of[k] === bucket) evicted.push(ids.subarray(8 * k, 8 * k + 8));
      }
      const columns = {
        ids: [] as Uint8Array[],
        values: [] as Uint8Array[],
        lastSeen: [] as Uint8Array[],
        counts: [] as Uint8Array[],
      };
      let stride = 0;
      for (const section of entry.sections) {
        if (section.firstBucket > bucket || section.lastBucket < bucket) continue;
        const rows = (await read(toPlace(section.frame))).tableRows!;
        stride = rows.stride;
        const of = inBucket(rows.ids);
        for (let k = 0; k < of.length; k++) {
          if (of[k] !== bucket) continue;
          columns.ids.push(rows.ids.subarray(8 * k, 8 * (k + 1)));
          columns.values.push(rows.values.subarray(4 * stride * k, 4 * stride * (k + 1)));
          columns.lastSeen.push(rows.lastSeen.subarray(4 * k, 4 * (k + 1)));
          columns.counts.push(rows.counts.subarray(4 * k, 4 * (k + 1)));
        }
      }
      parts.push({
        file,
        record,
        evictedIds: Buffer.concat(evicted),
        rows: {
          ids: Buffer.concat(columns.ids),
          values: Buffer.concat(columns.values),
          lastSeen: Buffer.concat(columns.lastSeen),
          counts: Buffer.concat(columns.counts),
        },
        stride,
      });
    } finally {
      await handle.close();
    }
  }
  return { parts, bytesRead };
}

async function open(file: string): Promise<fs.FileHandle> {
  try {
    return await fs.open(file, 'r');
  } catch (err) {
    throw ioError(`checkpoint ${file}`, err);
  }
}

function toPlace(raw: { offset: number; length: number; checksum: Buffer } | null): FramePlace {
  if (!raw) throw new CheckpointError('CHECKPOINT_CORRUPT', 'an index entry without its place');
  return {
    offset: Number(raw.offset),
    length: Number(raw.length),
    checksum: raw.checksum.toString('hex'),
  };
}

/** The frame at `place`, checked against its CRC-32C. */
async function readPlaced(handle: fs.FileHandle, file: string, place: FramePlace) {
  const bytes = Buffer.allocUnsafe(place.length);
  const { bytesRead } = await handle.read(bytes, 0, place.length, place.offset);
  const crc = new Checksum();
  crc.update(bytes.subarray(0, bytesRead));
  if (bytesRead !== place.length || crc.digest().toString('hex') !== place.checksum)
    throw new CheckpointError(
      'CHECKPOINT_CORRUPT',
      `checkpoint ${file}: the frame at byte ${place.offset} does not match its index entry`,
    );
  // Skip the varint length prefix.
  let prefix = 0;
  while (prefix < bytes.length && (bytes[prefix]! & 0x80) !== 0) prefix++;
  return decodeFrame(bytes.subarray(prefix + 1));
}
