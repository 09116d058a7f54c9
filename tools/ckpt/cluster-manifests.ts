import path from 'node:path';
import { metaFromJson } from '@pserver/checkpoint';
import type { EtcdSecuritySettings } from '@pserver/config';
import { connectEtcd, JobKeys } from '@pserver/coordination';
import type { ShardManifest } from './checkpoint-files';

/**
 * The manifests of a cluster job, whose metas live in etcd (`ckpt/<i>/hist/…`, newest first, as
 * the pservers commit them) rather than in `manifest.json` files: one per shard of the job's
 * shard count, the files under `root` (the checkpoint volume as this machine mounts it).
 */
export async function clusterManifests(
  endpoints: string[],
  job: string,
  root: string,
  security?: EtcdSecuritySettings,
): Promise<ShardManifest[]> {
  const keys = new JobKeys(job);
  const client = connectEtcd({ endpoints, ...(security && { security }) });
  try {
    const desired = Number(await client.get(keys.desired).string());
    if (!(desired > 0)) throw new Error(`job ${job}: no shard count in etcd (${keys.desired})`);
    const manifests: ShardManifest[] = [];
    for (let index = 0; index < desired; index++) {
      const history = await client
        .getAll()
        .prefix(keys.checkpointHistoryPrefix(index))
        .sort('Key', 'Descend')
        .strings();
      manifests.push({
        root,
        manifestFile: `etcd ${keys.checkpointHistoryPrefix(index)}`,
        shardDir: path.join(root, `shard-${index}`),
        index,
        shardCount: desired,
        checkpoints: Object.values(history).map((json) => metaFromJson(JSON.parse(json))),
      });
    }
    return manifests;
  } finally {
    client.close();
  }
}
