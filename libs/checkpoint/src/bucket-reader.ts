import { bucketsOfIds } from '@pserver/proto';
import type { TableRecord__Output } from '@pserver/proto';
import { chainOf, type ChainFile, type CheckpointMeta } from './meta';
import { PlacedFrames } from './placed-frames';

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
    const frames = await PlacedFrames.open(root, file);
    try {
      const index = await frames.index();
      const entry = index.tables.find((t) => t.table === table);
      if (!entry) throw frames.corrupt(`no table ${table}`);
      const ofTable = `of table ${table}`;
      const record = (await frames.read(entry.record, 'table', `the record ${ofTable}`)).frame
        .table!;
      const buckets = record.spec?.buckets ?? 0;
      const inBucket = (ids: Uint8Array): Uint32Array => bucketsOfIds(ids, buckets);
      const evicted: Uint8Array[] = [];
      for (const place of entry.evictions) {
        const ids = (await frames.read(place, 'tableEvictions', `evictions ${ofTable}`)).frame
          .tableEvictions!.ids;
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
        const rows = (await frames.read(section.frame, 'tableRows', `a row section ${ofTable}`))
          .frame.tableRows!;
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
      bytesRead += frames.bytesRead;
      await frames.close();
    }
  }
  return { parts, bytesRead };
}
