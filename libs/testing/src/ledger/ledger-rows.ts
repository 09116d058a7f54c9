import { bucketOfBigInt, tableShards } from '@pserver/proto';

/**
 * The row ledger: beside the dense one-hot, a table of one-float rows (constant 0, SGD with rate
 * 1) in which step k of the trainer with ordinal o pushes −1 to the row of its own id
 * `o × 2^40 + k`. Ids of ordinal 1 on are above 2^32, and consecutive ids fall in different
 * buckets, so the ledger's rows spread over every shard. The trainer fixtures compute the same id.
 */
export const ledgerTable = 'ledger-rows';

/** Reads rows of the ledger table by id (the test gives it: a client's `lookup`, for one). */
export type RowReader = (
  masters: string[],
  table: string,
  ids: BigInt64Array,
) => Promise<Float32Array>;

/** The row id of step `k` of the trainer with ordinal `ordinal`. */
export function ledgerRowId(ordinal: number, k: number): bigint {
  return (BigInt(ordinal) << 40n) + BigInt(k);
}

/** Every row id of the ledger, in ledger order (ordinal × capacity + k). */
export function ledgerRowIds(trainers: number, capacity: number): BigInt64Array {
  const ids = new BigInt64Array(trainers * capacity);
  for (let ordinal = 0; ordinal < trainers; ordinal++)
    for (let k = 0; k < capacity; k++) ids[ordinal * capacity + k] = ledgerRowId(ordinal, k);
  return ids;
}

/** The shard that holds the row at ledger position `coordinate`, by the table's placement. */
export function ledgerRowShardOf(
  ids: BigInt64Array,
  buckets: number,
  shards: number,
): (coordinate: number) => number {
  const route = tableShards(ledgerTable, buckets, shards);
  return (coordinate) => route[bucketOfBigInt(ids[coordinate]!, buckets)]!;
}
