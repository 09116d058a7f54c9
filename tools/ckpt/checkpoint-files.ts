import fs from 'node:fs';
import path from 'node:path';
import { metaFromJson, type CheckpointMeta } from '@pserver/checkpoint';

/** A shard's manifest: where its checkpoints live and which are committed, newest first. */
export interface ShardManifest {
  /** The checkpoint directory the metas' paths are relative to. */
  root: string;
  /** Where the metas were read: a `manifest.json`, or a cluster job's etcd prefix. */
  manifestFile: string;
  /** The directory that holds the shard's files (`<root>/shard-<i>`). */
  shardDir: string;
  index: number;
  shardCount: number;
  checkpoints: CheckpointMeta[];
}

/**
 * The latest committed checkpoint of every shard of a job: the manifests must be those of all
 * its shards, once each, of one shard count.
 */
export function latestCheckpoints(
  manifests: ShardManifest[],
): { index: number; root: string; meta: CheckpointMeta }[] {
  const shardCount = manifests[0]?.shardCount ?? 0;
  const indices = new Set(manifests.map((m) => m.index));
  if (manifests.some((m) => m.shardCount !== shardCount) || indices.size !== shardCount) {
    throw new Error(
      `need the manifests of all ${shardCount} shards once each; got shards [${[...indices].sort().join(', ')}]`,
    );
  }
  return manifests.map((m) => {
    const latest = m.checkpoints[0];
    if (!latest)
      throw new Error(`shard ${m.index} (${m.manifestFile}) has no committed checkpoint`);
    return { index: m.index, root: m.root, meta: latest };
  });
}

/**
 * Finds the manifests a path names: a `manifest.json`, a shard directory holding one, or a
 * checkpoint directory whose `shard-<i>/` subdirectories hold them.
 */
export function findManifests(target: string): ShardManifest[] {
  const stat = fs.statSync(target);
  if (stat.isFile()) return [readManifest(target)];
  const own = path.join(target, 'manifest.json');
  if (fs.existsSync(own)) return [readManifest(own)];
  const shards = fs
    .readdirSync(target)
    .filter(
      (name) => /^shard-\d+$/.test(name) && fs.existsSync(path.join(target, name, 'manifest.json')),
    )
    .map((name) => readManifest(path.join(target, name, 'manifest.json')));
  if (shards.length === 0)
    throw new Error(`${target}: no manifest.json, and no shard-<i>/manifest.json below it`);
  return shards.sort((a, b) => a.index - b.index);
}

function readManifest(file: string): ShardManifest {
  const json = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    index: number;
    shardCount: number;
    checkpoints: unknown[];
  };
  return {
    // Metas name files relative to the checkpoint directory: two levels above the manifest.
    root: path.dirname(path.dirname(path.resolve(file))),
    manifestFile: file,
    shardDir: path.dirname(path.resolve(file)),
    index: json.index,
    shardCount: json.shardCount,
    checkpoints: json.checkpoints.map(metaFromJson),
  };
}
