import fs from 'node:fs/promises';
import path from 'node:path';
import { CheckpointError } from './errors';
import { writeFileAtomic } from './fs-sync';
import { metaFromJson, metaToJson, type CheckpointMeta } from './meta';

/**
 * Where committed checkpoint metas live. Standalone: a manifest file in the shard's directory;
 * in cluster mode: etcd, behind a fenced transaction.
 */
export interface MetaStore {
  /** Committed checkpoints, newest first. */
  readonly checkpoints: readonly CheckpointMeta[];
  /** Whether any checkpoint was ever committed (an empty history then means they were all lost). */
  readonly everCommitted: boolean;
  /** Commits `meta` as the newest and keeps the `retain` newest; returns the kept ones. */
  commit(meta: CheckpointMeta, retain: number): Promise<readonly CheckpointMeta[]>;
  /** Drops metas whose files turned out to be missing or corrupt. */
  forget(paths: readonly string[]): Promise<void>;
}

interface ManifestFile {
  formatVersion: 1;
  index: number;
  shardCount: number;
  /** The standalone shard epoch: raised on every start. */
  epoch: number;
  everCommitted: boolean;
  checkpoints: Record<string, unknown>[];
}

export function shardDirectory(index: number): string {
  return `shard-${index}`;
}

/**
 * The standalone meta store: `<root>/shard-<i>/manifest.json`, written atomically. Opening it
 * raises the shard epoch and makes the new epoch durable before anything is served, so a restart
 * (and the rollback to the last checkpoint it implies) is visible to every trainer.
 */
export class ManifestStore implements MetaStore {
  private constructor(
    private readonly file: string,
    private manifest: ManifestFile,
    private metas: CheckpointMeta[],
  ) {}

  static async open(root: string, index: number, shardCount: number): Promise<ManifestStore> {
    const dir = path.join(root, shardDirectory(index));
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, 'manifest.json');
    let previous: ManifestFile | undefined;
    try {
      previous = JSON.parse(await fs.readFile(file, 'utf8')) as ManifestFile;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new CheckpointError(
          'CHECKPOINT_CORRUPT',
          `manifest ${file} cannot be read: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    if (previous && (previous.index !== index || previous.shardCount !== shardCount)) {
      throw new CheckpointError(
        'CHECKPOINT_INCOMPATIBLE',
        `manifest ${file} belongs to shard ${previous.index} of ${previous.shardCount}, not ${index} of ${shardCount}: placement would differ`,
      );
    }
    let metas: CheckpointMeta[];
    try {
      metas = (previous?.checkpoints ?? []).map(metaFromJson);
    } catch (err) {
      throw new CheckpointError(
        'CHECKPOINT_CORRUPT',
        `manifest ${file}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const manifest: ManifestFile = {
      formatVersion: 1,
      index,
      shardCount,
      epoch: (previous?.epoch ?? 0) + 1,
      everCommitted: previous?.everCommitted ?? false,
      checkpoints: previous?.checkpoints ?? [],
    };
    const store = new ManifestStore(file, manifest, metas);
    await store.save();
    return store;
  }

  get epoch(): number {
    return this.manifest.epoch;
  }

  get checkpoints(): readonly CheckpointMeta[] {
    return this.metas;
  }

  get everCommitted(): boolean {
    return this.manifest.everCommitted;
  }

  async commit(meta: CheckpointMeta, retain: number): Promise<readonly CheckpointMeta[]> {
    const metas = [meta, ...this.metas].slice(0, retain);
    await this.write(metas, true);
    return metas;
  }

  async forget(paths: readonly string[]): Promise<void> {
    await this.write(
      this.metas.filter((m) => !paths.includes(m.path)),
      this.manifest.everCommitted,
    );
  }

  private async write(metas: CheckpointMeta[], everCommitted: boolean): Promise<void> {
    const next = { ...this.manifest, everCommitted, checkpoints: metas.map(metaToJson) };
    const before = this.manifest;
    this.manifest = next;
    try {
      await this.save();
    } catch (err) {
      this.manifest = before;
      throw err;
    }
    this.metas = metas;
  }

  private async save(): Promise<void> {
    await writeFileAtomic(this.file, JSON.stringify(this.manifest, null, 1) + '\n');
  }
}
