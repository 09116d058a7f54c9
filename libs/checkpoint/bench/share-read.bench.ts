/**
 * How much of a shard's checkpoint a new shard reads for its share when the job is restored onto
 * another shard count: a full checkpoint and a delta of one shard (32 dense blocks of 1 Mi float32
 * with Adam's two slots; a table of 1 M rows at dim 16 with row-wise Adagrad, 4096 buckets), then
 * `readShardShare` for new shard 0 of M (placement as the contract's: `shardOf` for blocks,
 * `tableShardOf` for buckets) and for one bucket alone, against `readCheckpointChain` reading the
 * whole chain. The table's row sections are cut as the pserver cuts them (about 2 MiB), then at
 * about 32 MiB and at every bucket, to show what the section size does to a share's reads. Times are of
 * warm page-cache reads (the files were just written).
 *
 *   npx nx run checkpoint:bench-share
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bucketsOfIds, shardOf, tableShardOf } from '@pserver/proto';
import {
  chainOf,
  checkpointMeta,
  readCheckpointChain,
  readShardShare,
  writeCheckpointFile,
  type CheckpointMeta,
  type ShardSnapshot,
  type ShareFilter,
  type TableSnapshot,
  type TensorSnapshot,
} from '../src';

const blocks = 32;
const blockElements = 1 << 18;
const rows = 1_000_000;
const dim = 16;
const stride = dim + 1;
const buckets = 4096;
const deltaRows = rows / 100;

type Section = TableSnapshot['sections'] extends Iterable<infer S> ? S : never;

const bytes = (a: ArrayBufferView): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

function dense(salt: number): TensorSnapshot[] {
  return Array.from({ length: blocks }, (_, k) => {
    const content = new Float32Array(blockElements).fill(k + salt);
    return {
      tensor: {
        name: `w@${k}`,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        shape: [blocks * blockElements],
        content: bytes(content),
      },
      optimizer: { adam: {} },
      state: {
        updates: salt,
        slots: [
          { name: 'm', content: bytes(content) },
          { name: 'v', content: bytes(content) },
        ],
        scalars: {},
      },
    };
  });
}

/** How row sections are cut: at most `rows` rows, and at every bucket's end when `atBuckets`. */
interface Cut {
  rows: number;
  atBuckets: boolean;
}

/** A table part of `count` ids from `first`, in bucket order, cut into sections as `cut` says. */
function table(first: number, count: number, cut: Cut, salt: number): TableSnapshot {
  const ids = BigInt64Array.from({ length: count }, (_, k) => BigInt(first + k) * 2654435761n);
  const of = bucketsOfIds(ids, buckets);
  const starts = new Uint32Array(buckets + 1);
  for (const b of of) starts[b + 1]!++;
  for (let b = 0; b < buckets; b++) starts[b + 1]! += starts[b]!;
  const order = new Uint32Array(count);
  for (let k = 0; k < count; k++) order[starts[of[k]!]!++] = k;
  const sections: Section[] = [];
  for (let at = 0; at < count;) {
    let end = Math.min(at + cut.rows, count);
    if (cut.atBuckets)
      for (let k = at + 1; k < end; k++)
        if (of[order[k]!] !== of[order[at]!]) {
          end = k;
          break;
        }
    const part = order.subarray(at, end);
    at = end;
    sections.push({
      ids: bytes(BigInt64Array.from(part, (k) => ids[k]!)),
      values: bytes(new Float32Array(part.length * stride).fill(salt)),
      lastSeen: bytes(new Uint32Array(part.length).fill(salt)),
      counts: bytes(new Uint32Array(part.length).fill(1)),
      firstBucket: of[part[0]!]!,
      lastBucket: of[part[part.length - 1]!]!,
    });
  }
  return {
    spec: { name: 'emb', dim, buckets, optimizer: { rowwiseAdagrad: {} } },
    step: salt,
    stride,
    pendingIds: new Uint8Array(),
    pendingCounts: new Uint8Array(),
    evictedIds: new Uint8Array(),
    rows: count,
    sections,
  };
}

async function commit(
  root: string,
  seq: number,
  cut: Cut,
  parent?: CheckpointMeta,
): Promise<CheckpointMeta> {
  const snapshot: ShardSnapshot = {
    index: 0,
    shardCount: 1,
    shardEpoch: 1,
    seq,
    uuid: `u${seq}`,
    ...(parent && { parentUuid: parent.uuid }),
    blockSize: blockElements,
    job: '',
    createdUnixNs: '1',
    updatesApplied: seq,
    tensors: dense(seq),
    tables: [table(0, parent ? deltaRows : rows, cut, seq)],
    marks: [{ trainerId: 1, step: seq, updatedUnixMs: 0 }],
  };
  const written = await writeCheckpointFile(snapshot, { root, path: `shard-0/s${seq}.ckpt` });
  return checkpointMeta(snapshot, written, parent ? chainOf(parent) : []);
}

const mib = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await work();
  return { value, ms: performance.now() - start };
}

async function run(label: string, sectionBytes: number, atBuckets: boolean): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-share-'));
  try {
    const cut = { rows: Math.max(1, Math.floor(sectionBytes / (4 * stride + 16))), atBuckets };
    const full = await commit(root, 1, cut);
    const delta = await commit(root, 2, cut, full);
    const total = full.size + delta.size;
    const whole = await timed(() => readCheckpointChain(root, delta, {}));
    // Index, header, table record and step marks: what any share reads of a file.
    const nothing = (await readShardShare(root, full, { tensor: () => false, bucket: () => false }))
      .bytesRead;
    console.log(
      `\n${label}; files: ${mib(full.size)} + ${mib(delta.size)}; an empty share of the full ` +
        `file reads ${(nothing / 1024).toFixed(0)} KiB; whole read (verified, nothing kept): ${whole.ms.toFixed(0)} ms\n`,
    );
    console.log('| share | tensors | buckets | bytes read | of the files | time |');
    console.log('| --- | --- | --- | --- | --- | --- |');
    const shares: [string, ShareFilter][] = [
      ...[2, 4, 16, 64].map((m): [string, ShareFilter] => [
        `new shard 0 of ${m}`,
        {
          tensor: (name) => shardOf(name, m) === 0,
          bucket: (t, b) => tableShardOf(t, b, m) === 0,
        },
      ]),
      ['bucket 7 alone', { tensor: () => false, bucket: (_, b) => b === 7 }],
    ];
    for (const [name, filter] of shares) {
      const { value: share, ms } = await timed(() => readShardShare(root, delta, filter));
      const wantedBuckets = Array.from({ length: buckets }, (_, b) => b).filter((b) =>
        filter.bucket('emb', b),
      ).length;
      console.log(
        `| ${name} | ${share.tensors.length} of ${blocks} | ${wantedBuckets} of ${buckets} | ` +
          `${mib(share.bytesRead)} | ${((100 * share.bytesRead) / total).toFixed(1)} % | ${ms.toFixed(0)} ms |`,
      );
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(
    `${os.cpus().length} cores, ${os.cpus()[0]?.model}, Node.js ${process.versions.node}`,
  );
  await run('sections of 2 MiB, as the pserver cuts them', 2 * 2 ** 20, false);
  await run('sections of 32 MiB', 32 * 2 ** 20, false);
  await run('sections of at most 2 MiB cut at every bucket', 2 * 2 ** 20, true);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
