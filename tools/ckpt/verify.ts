import fs from 'node:fs';
import path from 'node:path';
import { readCheckpointFile } from '@pserver/checkpoint';
import { findManifests } from './checkpoint-files';

/**
 * Checks every committed checkpoint under `target` against its meta (size, whole-file CRC-32C,
 * structure) and lists files no meta names. True when every committed file is intact.
 */
export async function verify(target: string, print: (line: string) => void): Promise<boolean> {
  let intact = true;
  for (const shard of findManifests(target)) {
    print(
      `shard ${shard.index} of ${shard.shardCount} (${shard.manifestFile}): ${shard.checkpoints.length} committed`,
    );
    for (const meta of shard.checkpoints) {
      try {
        await readCheckpointFile(path.join(shard.root, meta.path), {}, meta);
        print(`  OK      ${meta.path}  ${meta.size} bytes  ${meta.updatesApplied} updates`);
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
