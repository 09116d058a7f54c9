import fs from 'node:fs';
import path from 'node:path';
import { readCheckpointFile } from '@pserver/checkpoint';
import { findManifests } from './checkpoint-files';
import { BucketCheck } from './tables';

/**
 * Checks every committed checkpoint under `target` against its meta (size, whole-file CRC-32C,
 * structure, table sections as the reader checks them), that its header names the manifest's
 * shard, and that every table id in it is in one of that shard's buckets; lists files no meta
 * names. True when every committed file is intact.
 */
export async function verify(target: string, print: (line: string) => void): Promise<boolean> {
  let intact = true;
  for (const shard of findManifests(target)) {
    print(
      `shard ${shard.index} of ${shard.shardCount} (${shard.manifestFile}): ${shard.checkpoints.length} committed`,
    );
    for (const meta of shard.checkpoints) {
      try {
        const buckets = new BucketCheck(shard.index, shard.shardCount);
        let tables = 0;
        let rows = 0;
        const { header } = await readCheckpointFile(
          path.join(shard.root, meta.path),
          {
            table: (record) => {
              tables++;
              buckets.table(record);
            },
            tableRows: (section) => {
              rows += section.ids.byteLength / 8;
              buckets.rows(section);
            },
          },
          meta,
        );
        const problems = buckets.problems();
        if (header.shardIndex !== shard.index || header.shardCount !== shard.shardCount)
          problems.unshift(
            `its header says shard ${header.shardIndex} of ${header.shardCount}, its manifest ${shard.index} of ${shard.shardCount}`,
          );
        if (problems.length > 0) throw new Error(problems.join('; '));
        print(
          `  OK      ${meta.path}  ${meta.size} bytes  ${meta.updatesApplied} updates` +
            (tables > 0 ? `  ${tables} tables, ${rows} rows in their buckets` : ''),
        );
      } catch (err) {
        intact = false;
        print(`  BROKEN  ${meta.path}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const named = new Set(shard.checkpoints.map((m) => path.basename(m.path)));
    const dir = path.dirname(shard.manifestFile);
    for (const name of fs.readdirSync(dir).sort()) {
      if (/\.ckpt(\.tmp|\.broken)?$/.test(name) && !named.has(name))
        print(`  not committed: ${name}`);
    }
  }
  return intact;
}
