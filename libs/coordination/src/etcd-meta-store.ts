import type { Etcd3 } from 'etcd3';
import { metaFromJson, metaToJson, type CheckpointMeta, type MetaStore } from '@pserver/checkpoint';
import type { JobKeys } from './keys';
import type { LeaseKeeper } from './lease-keeper';
import { TenureLostError } from './shard-tenure';

/**
 * Checkpoint metas in etcd (`ckpt/<i>/latest` and `ckpt/<i>/hist/…`), committed by a fenced
 * transaction (DESIGN section 5): it succeeds only while `assign/<i>` is held under this
 * pserver's lease with its epoch as create revision. A failed compare means this pserver was
 * replaced: `TenureLostError` (PSERVER_FENCED), and the caller deletes nothing and stops. The
 * pserver reaches it through its `EtcdShardTenure`, which ends the tenure on that error.
 */
export class EtcdMetaStore implements MetaStore {
  private constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly index: number,
    private readonly epoch: number,
    private readonly lease: LeaseKeeper,
    private metas: CheckpointMeta[],
    private committedOnce: boolean,
  ) {}

  static async open(
    client: Etcd3,
    keys: JobKeys,
    index: number,
    epoch: number,
    lease: LeaseKeeper,
  ): Promise<EtcdMetaStore> {
    const [history, latest] = await Promise.all([
      client.getAll().prefix(keys.checkpointHistoryPrefix(index)).sort('Key', 'Descend').strings(),
      client.get(keys.checkpointLatest(index)).string(),
    ]);
    const metas = Object.values(history).map((json) => metaFromJson(JSON.parse(json)));
    return new EtcdMetaStore(client, keys, index, epoch, lease, metas, latest !== null);
  }

  get checkpoints(): readonly CheckpointMeta[] {
    return this.metas;
  }

  get everCommitted(): boolean {
    return this.committedOnce;
  }

  async commit(meta: CheckpointMeta, retain: number): Promise<readonly CheckpointMeta[]> {
    const kept = [meta, ...this.metas].slice(0, retain);
    const dropped = this.metas.filter((m) => !kept.includes(m));
    const json = JSON.stringify(metaToJson(meta));
    await this.fencedTxn(
      [
        this.client.put(this.keys.checkpointLatest(this.index)).value(json),
        this.client.put(this.historyKey(meta)).value(json),
        ...dropped.map((m) => this.client.delete().key(this.historyKey(m))),
      ],
      async () => (await this.client.get(this.keys.checkpointLatest(this.index)).string()) === json,
    );
    this.metas = kept;
    this.committedOnce = true;
    return kept;
  }

  async forget(paths: readonly string[]): Promise<void> {
    const gone = this.metas.filter((m) => paths.includes(m.path));
    if (gone.length === 0) return;
    await this.fencedTxn(
      gone.map((m) => this.client.delete().key(this.historyKey(m))),
      async () => !(await this.client.get(this.historyKey(gone[0]!)).exists()),
    );
    this.metas = this.metas.filter((m) => !gone.includes(m));
  }

  private historyKey(meta: CheckpointMeta): string {
    return this.keys.checkpointHistory(this.index, meta.shardEpoch, meta.seq);
  }

  /** Runs the operations only while this pserver holds its index; reads back an unclear outcome. */
  private async fencedTxn(
    operations: Parameters<ReturnType<Etcd3['if']>['then']>,
    applied: () => Promise<boolean>,
  ): Promise<void> {
    if (!this.lease.isValid())
      throw new TenureLostError(this.index, 'its lease can no longer be trusted');
    const assign = this.keys.assign(this.index);
    let succeeded: boolean;
    try {
      const result = await this.client
        .if(assign, 'Lease', '==', this.lease.id)
        .and(assign, 'Create', '==', this.epoch)
        .then(...operations)
        .commit();
      succeeded = result.succeeded;
    } catch {
      succeeded = await applied();
    }
    if (!succeeded && !(await applied()))
      throw new TenureLostError(
        this.index,
        `assign/${this.index} is no longer held with epoch ${this.epoch}`,
      );
  }
}
