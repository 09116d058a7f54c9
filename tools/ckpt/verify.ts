import fs from 'node:fs';
import path from 'node:path';
import { ChainFileError, readCheckpointChain, type ChainFile } from '@pserver/checkpoint';
import type { ShardManifest } from './checkpoint-files';
import { BucketCheck } from './tables';

/**
 * Checks every committed checkpoint of `manifests` with every file its chain needs (a delta's
 * full checkpoint and the deltas before it): each file against the meta (size, whole-file
 * CRC-32C, structure, table sections as the reader checks them), each delta's header against
 * the file before it (its parent), each header against the manifest's shard, and every table id
 * of every file against that shard's buckets. A broken file fails every meta whose chain holds
 * it, and the line names it. Lists files no meta names. True when every committed chain is intact.
 */
export async function verify(
  manifests: ShardManifest[],
  print: (line: string) => void,
): Promise<boolean> {
  let intact = true;
  for (const shard of manifests) {
    print(
      `shard ${shard.index} of ${shard.shardCount} (${shard.manifestFile}): ${shard.checkpoints.length} committed`,
    );
    const named = new Set<string>();
    for (const meta of shard.checkpoints) {
      for (const file of [...meta.chain, meta]) named.add(path.basename(file.path));
      // The file a problem is in, named when it is not the meta's own.
      const inFile = (file: ChainFile | undefined): string =>
        file && file.path !== meta.path ? `chain file ${file.path}: ` : '';
      try {
        const problems: string[] = [];
        let reading: ChainFile | undefined;
        let buckets: BucketCheck | undefined;
        const endFile = (): void => {
          if (buckets) problems.push(...buckets.problems().map((p) => inFile(reading) + p));
        };
        let tables = 0;
        let rows = 0;
        const read = await readCheckpointChain(shard.root, meta, {
          file: (position) => {
            endFile();
            reading = position.file;
            buckets = new BucketCheck(shard.index, shard.shardCount);
            tables = 0;
          },
          header: (header) => {
            if (header.shardIndex !== shard.index || header.shardCount !== shard.shardCount)
              problems.push(
                `${inFile(reading)}its header says shard ${header.shardIndex} of ${header.shardCount}, its manifest ${shard.index} of ${shard.shardCount}`,
              );
          },
          table: (record) => {
            tables++;
            buckets!.table(record);
          },
          tableEvictions: (evictions) => buckets!.evictions(evictions),
          tableRows: (section) => {
            rows += section.ids.byteLength / 8;
            buckets!.rows(section);
          },
        });
        endFile();
        if (problems.length > 0) throw new Error(problems.join('; '));
        const kind =
          meta.chain.length === 0
            ? 'full'
            : `delta, chain of ${read.files} files (${read.bytes} bytes)`;
        print(
          `  OK      ${meta.path}  ${meta.size} bytes  ${meta.updatesApplied} updates  ${kind}` +
            (tables > 0 ? `  ${tables} tables, ${rows} rows in their buckets` : ''),
        );
      } catch (err) {
        intact = false;
        const at = err instanceof ChainFileError ? inFile(err.file) : '';
        print(`  BROKEN  ${meta.path}: ${at}${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const dir = shard.shardDir;
    for (const name of fs.readdirSync(dir).sort()) {
      if (/\.ckpt(\.tmp|\.broken)?$/.test(name) && !named.has(name))
        print(`  not committed: ${name}`);
    }
  }
  return intact;
}
