import fs from 'node:fs/promises';
import path from 'node:path';
import { chainOf, type CheckpointMeta } from './meta';
import { shardDirectory } from './manifest-store';

/** The relative path of a new checkpoint file: `shard-<i>/e<epoch>-s<seq>-<uuid>.ckpt`. */
export function checkpointPath(index: number, epoch: number, seq: number, uuid: string): string {
  return `${shardDirectory(index)}/e${epoch}-s${seq}-${uuid}.ckpt`;
}

/**
 * Deletes the shard's checkpoint files that no retained meta names, itself or in its chain. Run
 * only after a commit: deleting first is how PaddlePaddle lost checkpoints. Returns the deleted
 * paths.
 */
export async function removeUnreferenced(
  root: string,
  index: number,
  retained: readonly CheckpointMeta[],
): Promise<string[]> {
  const keep = new Set(retained.flatMap(chainOf).map((file) => path.basename(file.path)));
  const dir = path.join(root, shardDirectory(index));
  const removed: string[] = [];
  for (const name of await fs.readdir(dir)) {
    if (name.endsWith('.ckpt') && !keep.has(name)) {
      await fs.rm(path.join(dir, name), { force: true });
      removed.push(`${shardDirectory(index)}/${name}`);
    }
  }
  return removed;
}

/**
 * Deletes temporary files left by writers of this shard with a lower epoch (a crashed process).
 * Only in this shard's own directory, and never a file of the current or a higher epoch: in a
 * shared directory it may belong to a live owner.
 */
export async function removeLeftoverTemporaries(
  root: string,
  index: number,
  currentEpoch: number,
): Promise<string[]> {
  const dir = path.join(root, shardDirectory(index));
  const removed: string[] = [];
  for (const name of await fs.readdir(dir)) {
    const match = /^e(\d+)-s\d+-[\w-]+\.ckpt\.tmp$/.exec(name);
    if (match && Number(match[1]) < currentEpoch) {
      await fs.rm(path.join(dir, name), { force: true });
      removed.push(`${shardDirectory(index)}/${name}`);
    }
  }
  return removed;
}

/** Renames a corrupt file `<name>.broken` (kept for inspection, never read again). */
export async function markBroken(root: string, relative: string): Promise<boolean> {
  try {
    await fs.rename(path.join(root, relative), path.join(root, `${relative}.broken`));
    return true;
  } catch {
    return false;
  }
}
