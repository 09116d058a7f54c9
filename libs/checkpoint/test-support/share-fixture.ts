import fs from 'node:fs';
import path from 'node:path';
import {
  bucketsOfIds,
  type CheckpointIndex__Output,
  type TableRecord__Output,
  type TensorRecord__Output,
} from '@pserver/proto';
import { readCheckpointChain } from '../src/chain';
import { Checksum, checksumAlgorithm, decodeFrame, encodeFrame } from '../src/format';
import { chainOf, checkpointMeta, type CheckpointMeta } from '../src/meta';
import { readVarint } from '../src/placed-frames';
import type { CheckpointHeader } from '../src/reader';
import type { ShareFilter } from '../src/share-reader';
import type { ShardSnapshot, TableSnapshot, TensorSnapshot } from '../src/snapshot';
import { writeCheckpointFile } from '../src/writer';

/**
 * The checkpoint of a shard for the share reader's tests: two tables of several buckets and row
 * sections, dense tensors and blocks, step marks, and a delta on it; the share a filter must get,
 * computed from a whole read by hand; and ways to alter the files as an older writer, a faulty one
 * or a bad disk would.
 */

export const bytes = (array: ArrayBufferView): Buffer =>
  Buffer.from(array.buffer, array.byteOffset, array.byteLength);

export type Section = TableSnapshot['sections'] extends Iterable<infer S> ? S : never;

/** A table part of `ids`, sorted by bucket and cut into sections of 40 rows. */
export function table(
  name: string,
  buckets: number,
  stride: number,
  ids: bigint[],
  salt: number,
  evicted?: bigint[],
): TableSnapshot {
  const perSection = 40;
  const of = bucketsOfIds(bytes(BigInt64Array.from(ids)), buckets);
  const order = ids.map((_, k) => k).sort((a, b) => of[a]! - of[b]! || a - b);
  const sections: Section[] = [];
  for (let first = 0; first < order.length; first += perSection) {
    const part = order.slice(first, first + perSection);
    sections.push({
      ids: bytes(BigInt64Array.from(part, (k) => ids[k]!)),
      values: bytes(
        Float32Array.from(
          part.flatMap((k) => Array.from({ length: stride }, (_, j) => k + j / 8 + salt)),
        ),
      ),
      lastSeen: bytes(Uint32Array.from(part, () => salt)),
      counts: bytes(Uint32Array.from(part, (k) => k + salt)),
      firstBucket: of[part[0]!]!,
      lastBucket: of[part[part.length - 1]!]!,
    });
  }
  return {
    spec: { name, dim: 1, buckets, optimizer: { adagrad: {} } },
    step: 100 + salt,
    stride,
    pendingIds: bytes(BigInt64Array.from([BigInt(salt), 77n])),
    pendingCounts: bytes(Uint32Array.from([1, salt])),
    ...(evicted && { evictedIds: bytes(BigInt64Array.from(evicted)) }),
    rows: ids.length,
    sections,
  };
}

export function tensor(name: string, elements: number, salt: number): TensorSnapshot {
  const values = Float32Array.from({ length: elements }, (_, k) => k * salt);
  return {
    tensor: {
      name,
      elementType: 'ELEMENT_TYPE_FLOAT32',
      shape: [elements],
      content: bytes(values),
    },
    optimizer: { adam: { beta1: 0.8 } },
    state: {
      updates: salt,
      slots: [{ name: 'v', content: bytes(values.map((v) => -v)) }],
      scalars: {},
    },
  };
}

export const embIds = Array.from({ length: 1500 }, (_, k) => BigInt(k * 7919) - 2n ** 40n);
export const tagIds = Array.from({ length: 300 }, (_, k) => BigInt(k) * 2n ** 33n + 5n);

export const dense = (salt: number) => [
  tensor('w@0', 256, salt),
  tensor('w@1', 256, salt),
  tensor('w@2', 100, salt),
  tensor('bias', 10, salt),
];

export const bucketOf = (id: bigint, buckets: number): number =>
  bucketsOfIds(bytes(BigInt64Array.of(id)), buckets)[0]!;
/** emb: the buckets of an id evicted and pushed again in the delta, and of an id evicted. */
export const embWanted = [bucketOf(embIds[0]!, 64), bucketOf(embIds[1450]!, 64)];
export const filter: ShareFilter = {
  tensor: (name) => name === 'w@1' || name === 'bias',
  bucket: (t, b) => (t === 'emb' ? embWanted.includes(b) : b === 3),
};

/** A row as text: bucket, values, lastSeen, count. */
export function rowText(
  r: { values: Uint8Array; lastSeen: Uint8Array; counts: Uint8Array },
  k: number,
  stride: number,
  bucket: number,
): string {
  const hex = (b: Uint8Array, width: number) =>
    Buffer.from(b.subarray(width * k, width * (k + 1))).toString('hex');
  return `${bucket} ${hex(r.values, 4 * stride)} ${hex(r.lastSeen, 4)} ${hex(r.counts, 4)}`;
}

export const stripDensePlaces = (index: CheckpointIndex__Output) => ({ tables: index.tables });

/** A shard's checkpoint files under `root`. */
export class ShardFiles {
  constructor(readonly root: string) {}

  /** Writes a file of the chain `parent` ends with (a full one without); returns its meta. */
  async commit(
    seq: number,
    parts: { tensors: TensorSnapshot[]; tables: TableSnapshot[] },
    parent?: CheckpointMeta,
  ): Promise<CheckpointMeta> {
    const uuid = `u${seq}`;
    const snapshot: ShardSnapshot = {
      index: 2,
      shardCount: 3,
      shardEpoch: 1,
      seq,
      uuid,
      ...(parent && { parentUuid: parent.uuid }),
      blockSize: 256,
      job: 'j',
      createdUnixNs: '1764460800123456789',
      updatesApplied: seq,
      ...parts,
      marks: [
        { trainerId: 1, step: 10 * seq, updatedUnixMs: 1764460800000 + seq },
        { trainerId: 4, step: 3 * seq, updatedUnixMs: 1764460800000 },
      ],
      closedSteps: 9 * seq,
      marksAhead: [
        {
          slices: ['w@1', 'emb@5'],
          marks: [{ trainerId: 1, step: 10 * seq + 1, updatedUnixMs: 5 }],
        },
      ],
    };
    const written = await writeCheckpointFile(snapshot, {
      root: this.root,
      path: `shard-2/e1-s${seq}-${uuid}.ckpt`,
    });
    return checkpointMeta(snapshot, written, parent ? chainOf(parent) : []);
  }

  /** A full checkpoint with two tables, dense tensors and blocks, then a delta on it. */
  async chain(): Promise<{ full: CheckpointMeta; delta: CheckpointMeta }> {
    const full = await this.commit(1, {
      tensors: dense(1),
      tables: [table('emb', 64, 3, embIds, 1), table('tags', 16, 2, tagIds, 1)],
    });
    // Rows pushed (some changed, some new, one evicted and pushed again), ids evicted.
    const pushed = [...embIds.slice(0, 200), 99n, 2n ** 50n];
    const delta = await this.commit(
      2,
      {
        tensors: dense(2),
        tables: [
          table('emb', 64, 3, pushed, 2, [...embIds.slice(1400), embIds[0]!]),
          table('tags', 16, 2, tagIds.slice(100, 120), 2, tagIds.slice(0, 30)),
        ],
      },
      full,
    );
    return { full, delta };
  }

  /** What the share must be: the chain read whole by `readCheckpointChain`, kept to `want` by hand. */
  async reference(meta: CheckpointMeta, want: ShareFilter) {
    let last = false;
    let header: CheckpointHeader | undefined;
    const tensors: TensorRecord__Output[] = [];
    let marks: unknown;
    const records = new Map<string, TableRecord__Output>();
    const rows = new Map<string, Map<bigint, string>>();
    let current = '';
    await readCheckpointChain(this.root, meta, {
      file: (at) => (last = at.last),
      header: (h) => (header = last ? h : header),
      tensor: (r) => last && want.tensor(r.tensor!.name) && tensors.push(r),
      stepMarks: (m, closedSteps, ahead) =>
        (marks = last ? { marks: m, closedSteps, ahead } : marks),
      table: (r) => {
        current = r.spec!.name;
        records.set(current, r);
        if (!rows.has(current)) rows.set(current, new Map());
      },
      tableEvictions: (e) => {
        for (let at = 0; at < e.ids.length; at += 8)
          rows.get(current)!.delete(e.ids.readBigInt64LE(at));
      },
      tableRows: (r) => {
        const of = bucketsOfIds(r.ids, records.get(current)!.spec!.buckets);
        for (let k = 0; k < of.length; k++)
          if (want.bucket(current, of[k]!))
            rows.get(current)!.set(r.ids.readBigInt64LE(8 * k), rowText(r, k, r.stride, of[k]!));
      },
    });
    return { header, tensors, marks, records, rows };
  }

  /**
   * Rewrites a file's index frame through `change` (footer and meta made to match), as an older
   * writer or a faulty one would have left it.
   */
  rewriteIndex(
    meta: CheckpointMeta,
    change: (index: CheckpointIndex__Output) => object,
  ): CheckpointMeta {
    const file = path.join(this.root, meta.path);
    const content = fs.readFileSync(file);
    const at = meta.indexPlace!;
    const prefix = readVarint(content.subarray(at.offset)).bytes;
    const old = decodeFrame(content.subarray(at.offset + prefix, at.offset + at.length)).index!;
    const index = encodeFrame({ index: change(old) });
    const end = at.offset + at.length;
    const footer = decodeFrame(
      content.subarray(end + readVarint(content.subarray(end)).bytes),
    ).footer!;
    const before = Buffer.concat([content.subarray(0, at.offset), index]);
    const crc = (b: Uint8Array) => {
      const c = new Checksum();
      c.update(b);
      return c.digest();
    };
    const rewritten = Buffer.concat([
      before,
      encodeFrame({
        footer: { recordCount: footer.recordCount, checksumAlgorithm, checksum: crc(before) },
      }),
    ]);
    fs.writeFileSync(file, rewritten);
    return {
      ...meta,
      size: rewritten.length,
      checksum: crc(rewritten).toString('hex'),
      indexPlace: {
        offset: at.offset,
        length: index.byteLength,
        checksum: crc(index).toString('hex'),
      },
    };
  }

  /** The place of a frame the index lists, to corrupt it. */
  indexOf(meta: CheckpointMeta): CheckpointIndex__Output {
    const content = fs.readFileSync(path.join(this.root, meta.path));
    const at = meta.indexPlace!;
    const prefix = readVarint(content.subarray(at.offset)).bytes;
    return decodeFrame(content.subarray(at.offset + prefix, at.offset + at.length)).index!;
  }

  flipByte(meta: CheckpointMeta, offset: number): void {
    const file = path.join(this.root, meta.path);
    const content = fs.readFileSync(file);
    content[offset]! ^= 0x10;
    fs.writeFileSync(file, content);
  }
}
