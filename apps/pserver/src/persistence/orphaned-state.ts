import fs from 'node:fs/promises';
import path from 'node:path';
import {
  checkpointMeta,
  metaFromJson,
  metaToJson,
  shardDirectory,
  writeCheckpointFile,
  writeFileAtomic,
  type CheckpointMeta,
  type ShardSnapshot,
} from '@pserver/checkpoint';

/**
 * The state a fenced pserver leaves behind: its shard (or its in-sync copy of one) as it was when
 * it stopped acting, every push it acknowledged included, written in the checkpoint format beside
 * the shard's checkpoints. Nothing commits it: the next owner of the index adopts it instead of
 * the last committed checkpoint only when no owner announced serving the index after the orphan's
 * (its epoch is at least `EtcdShardTenure.lastServedEpoch`: an owner that never announced took no
 * push, so its state holds everything its predecessor's did) and it holds at least the newest
 * checkpoint's updates, so an outage of etcd, which fences every pserver, loses nothing that was
 * acknowledged.
 */
export interface OrphanedState {
  /** The epoch it was served under (a replica's copy: its primary's). */
  epoch: number;
  member: string;
  /** Its pushes in the primary's order (replication's sequence numbers). */
  appliedSeq: number;
  /** The file, verified when it is read back. */
  meta: CheckpointMeta;
}

/** `shard-<i>/orphans/`: not a checkpoint's place, so no clean-up of checkpoints deletes one. */
function orphanDirectory(index: number): string {
  return `${shardDirectory(index)}/orphans`;
}

const namePattern = /^e(\d+)-(.+)\.json$/;

/**
 * Writes `snapshot` (taken when the tenure ended, before anything else ran) crash-safely: the
 * checkpoint file first, then its description, each renamed into place. A state half written is
 * never read: without its description it does not exist.
 */
export async function writeOrphanedState(
  root: string,
  snapshot: ShardSnapshot,
  facts: { epoch: number; member: string; appliedSeq: number },
): Promise<string> {
  const dir = orphanDirectory(snapshot.index);
  await fs.mkdir(path.join(root, dir), { recursive: true, mode: 0o700 });
  const name = `e${facts.epoch}-${encodeURIComponent(facts.member)}`;
  const written = await writeCheckpointFile(snapshot, { root, path: `${dir}/${name}.ckpt` });
  const meta = checkpointMeta(snapshot, written, []);
  const description = { ...facts, meta: metaToJson(meta) };
  await writeFileAtomic(path.join(root, dir, `${name}.json`), JSON.stringify(description));
  return meta.path;
}

/** The states orphaned for shard `index` under epochs in `[from, below)`, the most advanced first. */
export async function findOrphanedStates(
  root: string,
  index: number,
  epochs: { from: number; below: number },
): Promise<OrphanedState[]> {
  const dir = path.join(root, orphanDirectory(index));
  const found: OrphanedState[] = [];
  for (const name of await listOrEmpty(dir)) {
    const match = namePattern.exec(name);
    const epoch = Number(match?.[1]);
    if (!match || epoch < epochs.from || epoch >= epochs.below) continue;
    try {
      const raw = JSON.parse(await fs.readFile(path.join(dir, name), 'utf8')) as {
        epoch: number;
        member: string;
        appliedSeq: number;
        meta: unknown;
      };
      const meta = metaFromJson(raw.meta);
      if (raw.epoch !== epoch || meta.index !== index) continue;
      found.push({ epoch, member: String(raw.member), appliedSeq: Number(raw.appliedSeq), meta });
    } catch {
      // Unreadable: not a state anyone can adopt.
    }
  }
  return found.sort(
    (a, b) => b.meta.updatesApplied - a.meta.updatesApplied || b.appliedSeq - a.appliedSeq,
  );
}

/**
 * Deletes shard `index`'s orphaned states of epochs below `epoch`: an owner of `epoch` holds or
 * has passed on what they held, and no later owner's assignment can follow them directly.
 */
export async function removeOrphanedStates(
  root: string,
  index: number,
  epoch: number,
): Promise<string[]> {
  const dir = path.join(root, orphanDirectory(index));
  const removed: string[] = [];
  for (const name of await listOrEmpty(dir)) {
    const match = /^e(\d+)-/.exec(name);
    if (!match || Number(match[1]) >= epoch) continue;
    await fs.rm(path.join(dir, name), { force: true });
    removed.push(`${orphanDirectory(index)}/${name}`);
  }
  return removed;
}

async function listOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
