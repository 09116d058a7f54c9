import { digestJobState } from '@pserver/checkpoint';
import { latestCheckpoints, type ShardManifest } from './checkpoint-files';

/**
 * Prints the digest of the state the latest checkpoints of a job restore (`digestJobState`,
 * libs/checkpoint/README.md, "Job digest"): the same at any shard count, so it shows that a
 * restore onto another shard count lost and changed nothing. With `json`, one JSON document.
 */
export async function digest(
  manifests: ShardManifest[],
  print: (line: string) => void,
  json = false,
): Promise<void> {
  const latest = latestCheckpoints(manifests).sort((a, b) => a.index - b.index);
  const result = await digestJobState(latest);
  const checkpoints = latest.map(({ index, meta }) => ({
    index,
    path: meta.path,
    chainFiles: meta.chain.length + 1,
  }));
  if (json) {
    print(JSON.stringify({ ...result, checkpoints }));
    return;
  }
  print(`digest ${result.digest}`);
  print(
    `${result.shards} shards, ${result.tensors} tensors and blocks (${result.elements} elements), ` +
      `${result.tables.length} tables (${result.rows} rows)`,
  );
  for (const table of result.tables)
    print(
      `  table ${table.name}  ${table.rows} rows  ${table.pending} pending admission  ${table.digest}`,
    );
  for (const { index, path, chainFiles } of checkpoints)
    print(
      `  shard ${index}: ${path}` +
        (chainFiles > 1 ? `  (a delta, chain of ${chainFiles} files)` : ''),
    );
}
