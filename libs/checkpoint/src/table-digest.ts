import { DigestWriter } from './digest-writer';
import { CheckpointError } from './errors';
import type { RestoredRows } from './restored-rows';

/** A table on one shard as its chain leaves it: the state of the last file that holds it. */
export interface ShardTableState {
  /** The spec's canonical encoding (`canonicalMessage('TableSpec', …)`). */
  spec: Uint8Array;
  /** The table's step on the shard: the unit of its rows' lastSeen. */
  step: number;
  /** Ids pending admission, int64 LE, and their counts, uint32 LE (copies). */
  pendingIds: Uint8Array;
  pendingCounts: Uint8Array;
}

/** One table's part of a job digest. */
export interface TableDigest {
  name: string;
  /** SHA-256 of the table's canonical form, 64 hex digits. */
  digest: string;
  rows: number;
  pending: number;
}

/**
 * The digest of a table over every shard (README.md, "Job digest"): its spec, then every
 * restored row by id — id, values and optimizer state (the whole stride), count, and age (the
 * step of its shard's table minus the row's lastSeen, which eviction reads: lastSeen is in that
 * shard's steps, and the steps of shards differ) — then the ids pending admission by id with
 * their counts. The table's step itself is left out: it counts the pushes that reached one shard.
 * `shards[i]` is shard i's state (every shard holds every table, with the same spec).
 */
export function tableDigest(
  name: string,
  shards: readonly ShardTableState[],
  rows: RestoredRows,
): TableDigest {
  const out = new DigestWriter();
  out.text(name);
  out.bytes(shards[0]!.spec);
  const restored = rows.restored();
  out.u64(restored.length);
  const rowBytes = 4 * rows.stride;
  for (const entry of restored) {
    const row = rows.row(entry);
    const step = shards[rows.shard(entry)]!.step;
    const lastSeen = rows.lastSeen[row]!;
    if (lastSeen > step)
      throw new CheckpointError(
        'CHECKPOINT_CORRUPT',
        `table ${name}: id ${rows.idOf(entry)} on shard ${rows.shard(entry)} was last seen at step ${lastSeen}, after its table's step ${step}`,
      );
    out.copy(rows.ids, 8 * entry, 8 * entry + 8);
    out.copy(rows.values, row * rowBytes, (row + 1) * rowBytes);
    out.u32(rows.counts[row]!);
    out.u64(step - lastSeen);
  }
  const pending = pendingById(name, shards);
  out.u64(pending.length);
  for (const { id, count } of pending) {
    out.raw(id);
    out.u32(count);
  }
  return {
    name,
    digest: out.digest().toString('hex'),
    rows: restored.length,
    pending: pending.length,
  };
}

/** Every shard's ids pending admission, in ascending id order (signed); an id twice is refused. */
function pendingById(
  name: string,
  shards: readonly ShardTableState[],
): { id: Uint8Array; value: bigint; count: number }[] {
  const all: { id: Uint8Array; value: bigint; count: number }[] = [];
  for (const shard of shards) {
    const ids = Buffer.from(shard.pendingIds);
    const counts = Buffer.from(shard.pendingCounts);
    if (counts.byteLength * 2 !== ids.byteLength)
      throw new CheckpointError(
        'CHECKPOINT_CORRUPT',
        `table ${name}: ${ids.byteLength / 8} ids pending admission with ${counts.byteLength / 4} counts`,
      );
    for (let k = 0; k < ids.byteLength / 8; k++)
      all.push({
        id: ids.subarray(8 * k, 8 * k + 8),
        value: ids.readBigInt64LE(8 * k),
        count: counts.readUInt32LE(4 * k),
      });
  }
  all.sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  for (let k = 1; k < all.length; k++)
    if (all[k]!.value === all[k - 1]!.value)
      throw new CheckpointError(
        'CHECKPOINT_CORRUPT',
        `table ${name}: id ${all[k]!.value} is pending admission twice`,
      );
  return all;
}
