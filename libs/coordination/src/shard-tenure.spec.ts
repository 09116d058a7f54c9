import { checksumAlgorithm, type CheckpointMeta, type MetaStore } from '@pserver/checkpoint';
import { TenureLostError } from './shard-tenure';
import { StandaloneTenure } from './standalone-tenure';

const meta = (seq: number): CheckpointMeta => ({
  uuid: `u${seq}`,
  path: `shard-0/e3-s${seq}-u${seq}.ckpt`,
  size: 10,
  checksumAlgorithm,
  checksum: '0000abcd',
  timestampNs: '1',
  shardEpoch: 3,
  index: 0,
  seq,
  updatesApplied: seq,
  formatVersion: 1,
  chain: [],
});

/** Keeps metas in memory; `refuseNext` makes the next commit fail its fence like etcd's would. */
class MemoryStore implements MetaStore {
  checkpoints: CheckpointMeta[] = [];
  everCommitted = false;
  refuseNext = false;

  commit(m: CheckpointMeta, retain: number): Promise<readonly CheckpointMeta[]> {
    if (this.refuseNext) return Promise.reject(new TenureLostError(0, 'assign/0 was replaced'));
    this.checkpoints = [m, ...this.checkpoints].slice(0, retain);
    this.everCommitted = true;
    return Promise.resolve(this.checkpoints);
  }

  forget(paths: readonly string[]): Promise<void> {
    this.checkpoints = this.checkpoints.filter((m) => !paths.includes(m.path));
    return Promise.resolve();
  }
}

const tenureOf = (store: MetaStore): StandaloneTenure =>
  new StandaloneTenure({ index: 0, shardCount: 2, epoch: 3 }, store);

describe('a shard tenure', () => {
  it('standalone: no reshape to restore, nothing to mark, no source files to keep', async () => {
    const tenure = tenureOf(new MemoryStore());
    expect(tenure.reshape).toBeUndefined();
    await expect(tenure.markRestored()).resolves.toBeUndefined();
    await expect(tenure.reshapeFilesToKeep()).resolves.toEqual([]);
  });

  it('carries index, count, block size and epoch, and holds until lost', async () => {
    const tenure = tenureOf(new MemoryStore());
    expect(tenure).toMatchObject({ index: 0, shardCount: 2, blockSize: 0, epoch: 3 });
    expect(tenure.holds()).toBe(true);
    expect(() => tenure.require()).not.toThrow();
    await expect(tenure.confirm()).resolves.toBe(true);
  });

  it('is lost once: every holder is told once, a late holder at once, and the first reason stays', () => {
    const tenure = tenureOf(new MemoryStore());
    const told: string[] = [];
    tenure.onLost((err) => told.push(`a:${err.reason}`));
    tenure.onLost((err) => told.push(`b:${err.reason}`));
    tenure.lose('replaced');
    tenure.lose('lease expired');
    tenure.onLost((err) => told.push(`late:${err.reason}`));
    expect(told).toEqual(['a:replaced', 'b:replaced', 'late:replaced']);
    expect(tenure.holds()).toBe(false);
    expect(() => tenure.require()).toThrow(TenureLostError);
    expect(tenure.lost).toMatchObject({ code: 'PSERVER_FENCED', index: 0, reason: 'replaced' });
  });

  it('refuses checkpoint-meta commits after it is lost, with the typed error, and commits nothing', async () => {
    const store = new MemoryStore();
    const tenure = tenureOf(store);
    await tenure.checkpoints.commit(meta(1), 3);
    tenure.lose('replaced');
    const refused = tenure.checkpoints.commit(meta(2), 3);
    await expect(refused).rejects.toBeInstanceOf(TenureLostError);
    await expect(refused).rejects.toMatchObject({ code: 'PSERVER_FENCED' });
    expect(store.checkpoints.map((m) => m.seq)).toEqual([1]);
    expect(tenure.checkpoints.checkpoints.map((m) => m.seq)).toEqual([1]);
  });

  it('ends when a commit fails its fence, and tells its holders', async () => {
    const store = new MemoryStore();
    const tenure = tenureOf(store);
    const told: string[] = [];
    tenure.onLost((err) => told.push(err.reason));
    store.refuseNext = true;
    await expect(tenure.checkpoints.commit(meta(1), 3)).rejects.toBeInstanceOf(TenureLostError);
    expect(told).toEqual(['assign/0 was replaced']);
    expect(tenure.holds()).toBe(false);
  });

  it('passes on a commit failure that is not a fence without ending', async () => {
    const store = new MemoryStore();
    store.commit = () => Promise.reject(new Error('ENOSPC'));
    const tenure = tenureOf(store);
    await expect(tenure.checkpoints.commit(meta(1), 3)).rejects.toThrow('ENOSPC');
    expect(tenure.holds()).toBe(true);
  });
});
