/**
 * Writes a job's checkpoints for measuring the tool on delta chains (README.md, "export"):
 * `DIR/chain` holds 2 shards, each a full checkpoint of 500 000 rows of one table (dim 16,
 * row-wise Adagrad) and 3 deltas on it of 10 000 rows pushed (half of them new) and 5 000 ids
 * evicted each; `DIR/full` holds the same shards as one full checkpoint of the state those chains
 * restore, so the two export the same bytes.
 *
 *   node tools/bundle.js tools/ckpt/bench-chain.ts dist/bench/ckpt-chain.js
 *   node dist/bench/ckpt-chain.js DIR
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  chainOf,
  checkpointMeta,
  checkpointPath,
  ManifestStore,
  writeCheckpointFile,
  type ChainFile,
  type ShardSnapshot,
  type TableSnapshot,
} from '@pserver/checkpoint';
import { bucketsOfIds, tableShards, type TableSpec } from '@pserver/proto';

const shardCount = 2;
const rowsPerShard = 500_000;
const deltas = 3;
const pushedPerDelta = 10_000;
const evictedPerDelta = 5_000;
const dim = 16;
const stride = dim + 1;
const buckets = 4096;
const spec: TableSpec & { name: string } = {
  name: 'emb',
  dim,
  buckets,
  optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.1 } },
};

/** A shard's rows: id → stride floats. */
type Rows = Map<bigint, Float32Array>;

function tableSnapshot(unordered: bigint[], rows: Rows, evicted: bigint[] = []): TableSnapshot {
  // Rows go to a checkpoint in bucket order.
  const of = bucketsOfIds(BigInt64Array.from(unordered), buckets);
  const order = unordered.map((_, k) => k).sort((a, b) => of[a]! - of[b]! || a - b);
  const ids = order.map((k) => unordered[k]!);
  const n = ids.length;
  const values = new Float32Array(n * stride);
  ids.forEach((id, k) => values.set(rows.get(id)!, k * stride));
  const bytes = (a: ArrayBufferView): Uint8Array =>
    new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  return {
    spec,
    step: 1,
    stride,
    pendingIds: new Uint8Array(0),
    pendingCounts: new Uint8Array(0),
    ...(evicted.length > 0 && { evictedIds: bytes(BigInt64Array.from(evicted)) }),
    rows: n,
    sections: [
      {
        ids: bytes(BigInt64Array.from(ids)),
        values: bytes(values),
        lastSeen: new Uint8Array(4 * n),
        counts: new Uint8Array(4 * n),
        firstBucket: n > 0 ? of[order[0]!]! : 0,
        lastBucket: n > 0 ? of[order[n - 1]!]! : 0,
      },
    ],
  };
}

async function writeShard(
  root: string,
  index: number,
  files: { uuid: string; table: TableSnapshot }[],
): Promise<void> {
  const store = await ManifestStore.open(root, index, shardCount);
  const chain: ChainFile[] = [];
  for (const [seq0, { uuid, table }] of files.entries()) {
    const seq = seq0 + 1;
    const snapshot: ShardSnapshot = {
      index,
      shardCount,
      shardEpoch: store.epoch,
      seq,
      uuid,
      ...(chain.length > 0 && { parentUuid: chain[chain.length - 1]!.uuid }),
      blockSize: 0,
      job: '',
      createdUnixNs: '1764460800000000000',
      updatesApplied: seq,
      tensors: [],
      tables: [table],
      marks: [],
    };
    const written = await writeCheckpointFile(snapshot, {
      root,
      path: checkpointPath(index, store.epoch, seq, uuid),
    });
    const meta = checkpointMeta(snapshot, written, [...chain]);
    await store.commit(meta, deltas + 1);
    chain.push(...chainOf(meta).slice(-1));
  }
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: ckpt-chain.js DIR');
  const shards = tableShards(spec.name, buckets, shardCount);
  let nextId = 0n;
  const nextIdOf = (index: number): bigint => {
    for (;;) {
      const id = nextId++ * 7919n - 2n ** 40n;
      if (shards[bucketsOfIds(new BigInt64Array([id]), buckets)[0]!] === index) return id;
    }
  };
  let value = 0;
  const row = (): Float32Array => Float32Array.from({ length: stride }, () => (value++ % 997) / 7);
  for (let index = 0; index < shardCount; index++) {
    const rows: Rows = new Map();
    for (let k = 0; k < rowsPerShard; k++) rows.set(nextIdOf(index), row());
    const chainFiles = [{ uuid: `full-${index}`, table: tableSnapshot([...rows.keys()], rows) }];
    for (let d = 1; d <= deltas; d++) {
      const live = [...rows.keys()];
      const evicted = live.filter((_, k) => k % 97 === d).slice(0, evictedPerDelta);
      for (const id of evicted) rows.delete(id);
      const updated = live.filter((id, k) => k % 89 === d && rows.has(id));
      const pushed = [...updated.slice(0, pushedPerDelta / 2)];
      while (pushed.length < pushedPerDelta) pushed.push(nextIdOf(index));
      for (const id of pushed) rows.set(id, row());
      chainFiles.push({ uuid: `delta-${index}-${d}`, table: tableSnapshot(pushed, rows, evicted) });
    }
    await writeShard(path.join(dir, 'chain'), index, chainFiles);
    await writeShard(path.join(dir, 'full'), index, [
      { uuid: `restored-${index}`, table: tableSnapshot([...rows.keys()], rows) },
    ]);
  }
  const bytes = (root: string): number =>
    fs
      .readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ckpt'))
      .reduce((n, e) => n + fs.statSync(path.join(e.parentPath, e.name)).size, 0);
  console.log(
    `wrote ${dir}/chain (${bytes(path.join(dir, 'chain'))} bytes) and ${dir}/full (${bytes(path.join(dir, 'full'))} bytes)`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
