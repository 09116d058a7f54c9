import { randomUUID } from 'node:crypto';
import {
  ChainFileError,
  chainOf,
  CheckpointError,
  checkpointMeta,
  checkpointPath,
  markBroken,
  SnapshotPools,
  removeLeftoverTemporaries,
  removeUnreferenced,
  shardDirectory,
  writeCheckpointFile,
  type ChainFile,
  type CheckpointMeta,
  type WritePointHook,
} from '@pserver/checkpoint';
import { TenureLostError, type Reshape, type ShardTenure } from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Shard } from '../shard/shard';
import { restoreShard } from './restore-shard';
import { restoreShare } from './restore-share';
import type { SliceFilter } from '../shard/share-parts';
import { startSnapshot } from './shard-snapshot';
import { findOrphanedStates, type OrphanedState } from './orphaned-state';

export interface CheckpointerOptions {
  /** The checkpoint directory (shared by the shards of a job; each writes `shard-<i>/`). */
  root: string;
  shard: Shard;
  /**
   * The shard's tenure: its epoch names the files, and its checkpoint metas are committed only
   * while it holds (a commit refused after it ended throws `TenureLostError` and deletes nothing).
   */
  tenure: ShardTenure;
  /** Committed checkpoints kept; older files are deleted after each commit. */
  retain: number;
  /**
   * Deltas written after a full checkpoint of a shard with tables before the next full one (one
   * is also written when the chain's deltas, the next one included, would outgrow half of its
   * full checkpoint); 0: every checkpoint is full.
   */
  deltasPerFull: number;
  logger: Logger;
  /** Called at each dangerous point of the write path (failpoints in tests). */
  hook?: WritePointHook;
  /** The process's snapshot memory (a pool of this checkpointer's own when absent). */
  pools?: SnapshotPools;
  /** Step marks of trainers silent this long are dropped at each checkpoint. */
  stepMarkRetentionMs?: number;
  /** Called after each commit with its duration, and after each failure (metrics). */
  onCommitted?: (seconds: number) => void;
  onFailed?: () => void;
}

/** What recovery found. */
export type RecoveryOutcome =
  | { kind: 'restored'; meta: CheckpointMeta; broken: string[] }
  /** The state a fenced owner left (see orphaned-state.ts); nothing commits it until a save. */
  | { kind: 'adopted'; orphan: OrphanedState; broken: string[] }
  /** The share of a job's checkpoints written at another shard count (a reshape). */
  | { kind: 'reshaped'; from: number; bytes: number; broken: string[] }
  | { kind: 'fresh'; broken: string[] }
  | { kind: 'lost'; broken: string[] };

/**
 * Saves the shard and recovers it (DESIGN section 5). A checkpoint is a copy of the shard as it
 * was at one moment between two updates (its tensors copied copy-on-write while pushes go on,
 * `startSnapshot`), written to a new file crash-safely, then committed by its meta; only
 * after the commit are files that no retained meta names (itself or in its chain) deleted. Saves
 * never overlap: a save asked for during another waits for it and then takes its own copy, so
 * what it returns includes every update acknowledged before it was asked for.
 *
 * A shard with tables writes deltas: after a full checkpoint, up to `deltasPerFull` files each
 * holding the tables' rows pushed and ids evicted since the previous file (tensors and step
 * marks whole), chained in the meta. Any failed save makes the next one full (the failed copy
 * already cleared the rows' dirty bits). Recovery reads a meta's chain in order.
 */
export class Checkpointer {
  private seq = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private lastSavedUpdates = -1;
  private latest: CheckpointMeta | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Memory for snapshots, reused from one checkpoint to the next. */
  /**
   * The chain the next delta extends: its files, the full one first and the last committed one
   * last, and its bytes. Undefined: the next checkpoint is full.
   */
  private deltaChain: { files: ChainFile[]; fullBytes: number; deltaBytes: number } | undefined;

  private readonly pools: SnapshotPools;

  constructor(private readonly options: CheckpointerOptions) {
    this.latest = options.tenure.checkpoints.checkpoints[0];
    this.pools = options.pools ?? new SnapshotPools();
  }

  /** The last committed checkpoint, if any. */
  get lastCommitted(): CheckpointMeta | undefined {
    return this.latest;
  }

  /**
   * Loads the newest checkpoint that reads back intact. A missing or corrupt file is renamed
   * `.broken`, logged, and the next older one is tried. 'lost' means checkpoints were committed
   * once and none is valid now: the caller must not serve an empty shard as if nothing happened.
   *
   * With `orphansFrom` (the epoch of the owner that announced serving the shard last), the state
   * that owner — or a later one that never announced — left when it fenced comes first, when it
   * holds at least what the newest committed checkpoint holds: 'adopted', which the caller
   * commits before serving. When the job's shard count changed while it was down and this index
   * has committed nothing at the new count, its share of the old checkpoints: 'reshaped', which
   * the caller commits before serving too.
   */
  async recover(orphansFrom = 0): Promise<RecoveryOutcome> {
    const { root, shard, logger, tenure } = this.options;
    const { checkpoints: store, epoch } = tenure;
    await fs.mkdir(path.join(root, shardDirectory(shard.index)), { recursive: true, mode: 0o700 });
    const removed = await removeLeftoverTemporaries(root, shard.index, epoch);
    if (removed.length > 0)
      logger.info('removed temporary files of crashed writers', { files: removed });
    const adopted = orphansFrom > 0 ? await this.adoptOrphan(orphansFrom) : undefined;
    if (adopted) return adopted;
    // The job's count changed while it was down: nothing of this count was committed yet, and
    // this index's state is its share of the checkpoints of every old index.
    if (tenure.reshape && store.checkpoints.length === 0)
      return this.restoreReshape(tenure.reshape);
    // Files found unusable (renamed .broken), and the metas that needed one of them.
    const broken: string[] = [];
    const forgotten: string[] = [];
    const started = performance.now();
    for (const meta of store.checkpoints) {
      if (chainOf(meta).some((file) => broken.includes(file.path))) {
        forgotten.push(meta.path);
        continue;
      }
      try {
        const read = await restoreShard(root, meta, shard);
        await store.forget(forgotten);
        this.latest = meta;
        this.lastSavedUpdates = meta.updatesApplied;
        // The restored shard is exactly the chain's end: the next delta may extend it.
        const files = chainOf(meta);
        this.deltaChain = {
          files,
          fullBytes: files[0]!.size,
          deltaBytes: files.slice(1).reduce((total, file) => total + file.size, 0),
        };
        logger.info('recovered the shard from a checkpoint', {
          checkpoint: meta.path,
          chain: meta.chain.map((file) => file.path),
          tensors: read.tensors,
          tables: read.tables,
          bytes: read.bytes,
          updatesApplied: meta.updatesApplied,
          skippedBroken: broken,
          ms: Math.round(performance.now() - started),
        });
        await this.removeUnreferenced();
        return { kind: 'restored', meta, broken };
      } catch (err) {
        if (err instanceof CheckpointError && err.code === 'CHECKPOINT_INCOMPATIBLE') throw err;
        const faulty = err instanceof ChainFileError ? err.file : meta;
        const renamed = await markBroken(root, faulty.path);
        logger.error('checkpoint unusable, trying the previous one', {
          checkpoint: meta.path,
          file: faulty.path,
          renamedTo: renamed ? `${faulty.path}.broken` : undefined,
          err,
        });
        broken.push(faulty.path);
        forgotten.push(meta.path);
      }
    }
    await store.forget(forgotten);
    await this.removeUnreferenced();
    return { kind: store.everCommitted ? 'lost' : 'fresh', broken };
  }

  /**
   * Restores the shard's share of a reshape (`restoreShare`). Nothing is committed: the caller
   * saves before serving, and only then says the index restored its share. A source that cannot
   * be read leaves nothing valid: 'lost' (an operator restores the files).
   */
  private async restoreReshape(reshape: Reshape): Promise<RecoveryOutcome> {
    const { root, shard, logger } = this.options;
    const started = performance.now();
    try {
      const read = await restoreShare(root, reshape, shard);
      this.deltaChain = undefined;
      this.lastSavedUpdates = -1;
      logger.info('restored the shard from the checkpoints of another shard count', {
        from: reshape.from,
        to: reshape.to,
        sources: read.sources,
        tensors: read.tensors,
        tables: read.tables,
        bytesRead: read.bytes,
        // Groups of slices whose shard counted more of a trainer's steps than this shard's marks
        // say (its step was in flight when the job stopped).
        marksAhead: shard.ahead.entries().length,
        ms: Math.round(performance.now() - started),
      });
      return { kind: 'reshaped', from: reshape.from, bytes: read.bytes, broken: [] };
    } catch (err) {
      if (err instanceof CheckpointError && err.code === 'CHECKPOINT_INCOMPATIBLE') throw err;
      const file = err instanceof ChainFileError ? err.file.path : undefined;
      logger.error('a checkpoint this shard restores its share from is unusable', { file, err });
      return { kind: 'lost', broken: file ? [file] : [] };
    }
  }

  /**
   * Loads the most advanced state orphaned from epoch `orphansFrom` on that holds at least the
   * newest committed checkpoint's updates (a replica's copy can be older than its primary's last
   * checkpoint) and reads back intact.
   */
  private async adoptOrphan(orphansFrom: number): Promise<RecoveryOutcome | undefined> {
    const { root, shard, logger, tenure } = this.options;
    const newest = tenure.checkpoints.checkpoints[0];
    const epochs = { from: orphansFrom, below: tenure.epoch };
    for (const orphan of await findOrphanedStates(root, shard.index, epochs)) {
      if (newest && orphan.meta.updatesApplied < newest.updatesApplied) {
        logger.info('an orphaned state is older than the newest checkpoint; not adopted', {
          orphan: orphan.meta.path,
          updatesApplied: orphan.meta.updatesApplied,
          checkpointUpdatesApplied: newest.updatesApplied,
        });
        continue;
      }
      try {
        const read = await restoreShard(root, orphan.meta, shard);
        // Uncommitted: the next save is full and must happen (the caller saves before serving).
        this.deltaChain = undefined;
        this.lastSavedUpdates = -1;
        logger.info('adopted the state a fenced owner of the shard left', {
          orphan: orphan.meta.path,
          orphanEpoch: orphan.epoch,
          member: orphan.member,
          appliedSeq: orphan.appliedSeq,
          updatesApplied: orphan.meta.updatesApplied,
          bytes: read.bytes,
        });
        return { kind: 'adopted', orphan, broken: [] };
      } catch (err) {
        if (err instanceof CheckpointError && err.code === 'CHECKPOINT_INCOMPATIBLE') throw err;
        logger.error('an orphaned state is unusable; trying the next', {
          orphan: orphan.meta.path,
          err,
        });
      }
    }
    return undefined;
  }

  /** Writes and commits a checkpoint now (after any save in progress). */
  save(reason: string): Promise<CheckpointMeta> {
    const run = this.chain.then(() => this.saveNow(reason));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Writes a full copy of the shard in the checkpoint format to `<root>/<name>` for a replica to
   * fetch (nothing is committed). `taken` runs in the same tick as the copy's moment, before any
   * push can land after it. The copy starts the tables' change tracking anew, as a full
   * checkpoint does, so the next checkpoint is full. Copies and saves run one after another: each takes the snapshot
   * memory the one before faulted in (two at once would fault in fresh memory with pushes held).
   */
  writeCopy(
    root: string,
    name: string,
    taken: () => void,
    keep?: SliceFilter,
  ): Promise<CheckpointMeta> {
    const run = this.chain.then(() => this.writeCopyNow(root, name, taken, keep));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async writeCopyNow(
    root: string,
    name: string,
    taken: () => void,
    keep?: SliceFilter,
  ): Promise<CheckpointMeta> {
    const { shard, tenure, hook } = this.options;
    const buffers = this.pools.take();
    try {
      const started = startSnapshot(
        shard,
        { shardEpoch: tenure.epoch, seq: 0, uuid: randomUUID() },
        buffers,
        keep,
      );
      try {
        taken();
      } catch (err) {
        started.cancel();
        throw err;
      }
      this.deltaChain = undefined;
      const snapshot = await started.finish();
      // Read once by the replica or receiver and deleted: no crash needs it on disk.
      const written = await writeCheckpointFile(snapshot, {
        root,
        path: name,
        hook,
        durable: false,
      });
      return checkpointMeta(snapshot, written, []);
    } finally {
      this.pools.give(buffers);
    }
  }

  /** Whether the shard changed since the last committed checkpoint. */
  get dirty(): boolean {
    return (
      this.options.shard.initialized && this.options.shard.updatesApplied !== this.lastSavedUpdates
    );
  }

  /** Saves every `intervalMs` when the shard changed; failures are logged and retried next time. */
  startPeriodic(intervalMs: number): void {
    this.timer = setInterval(() => {
      if (!this.dirty) return;
      this.save('periodic').catch(() => undefined);
    }, intervalMs);
    this.timer.unref();
  }

  /** Ends the periodic checkpoints and waits for a save under way. */
  async stop(): Promise<void> {
    this.stopPeriodic();
    await this.chain;
  }

  /** Ends the periodic checkpoints; a save under way goes on. */
  stopPeriodic(): void {
    clearInterval(this.timer);
  }

  private async saveNow(reason: string): Promise<CheckpointMeta> {
    const { root, shard, tenure, retain, logger, hook } = this.options;
    const { checkpoints: store, epoch } = tenure;
    const started = performance.now();
    const seq = ++this.seq;
    const uuid = randomUUID();
    if (this.options.stepMarkRetentionMs !== undefined) {
      const olderThan = Date.now() - this.options.stepMarkRetentionMs;
      shard.ahead.prune(olderThan);
      const pruned = shard.marks.prune(olderThan);
      if (pruned > 0)
        logger.info('forgot the step marks of long-gone trainers', { trainers: pruned });
    }
    const parent = this.nextParent();
    const buffers = this.pools.take();
    let copying;
    try {
      copying = startSnapshot(
        shard,
        { shardEpoch: epoch, seq, uuid, ...(parent && { parentUuid: parent.uuid }) },
        buffers,
      );
    } catch (err) {
      this.pools.give(buffers);
      throw err;
    }
    // Pushes waited for this part of the copy only; tensors and rows are copied as pushes go on.
    const heldMs = performance.now() - started;
    const chain = parent ? this.deltaChain!.files : [];
    try {
      const snapshot = await copying.finish();
      const copiedMs = performance.now() - started;
      const written = await writeCheckpointFile(snapshot, {
        root,
        path: checkpointPath(shard.index, epoch, seq, uuid),
        hook,
      });
      const meta = checkpointMeta(snapshot, written, chain);
      await hook?.('before-commit');
      await store.commit(meta, retain);
      this.extendChain(meta);
      this.latest = meta;
      this.lastSavedUpdates = snapshot.updatesApplied;
      await hook?.('after-commit-before-delete');
      const deleted = await this.removeUnreferenced();
      logger.info('checkpoint committed', {
        reason,
        checkpoint: meta.path,
        kind: chain.length > 0 ? 'delta' : 'full',
        chain: chain.length,
        bytes: meta.size,
        heldMs: Math.round(heldMs),
        copyMs: Math.round(copiedMs),
        totalMs: Math.round(performance.now() - started),
        deleted,
      });
      this.options.onCommitted?.((performance.now() - started) / 1000);
      return meta;
    } catch (err) {
      // The copy cleared the tables' dirty bits: only a full checkpoint has them all again.
      this.deltaChain = undefined;
      // Fenced (the tenure ended, and has told its holders): nothing is deleted.
      if (err instanceof TenureLostError)
        logger.error('checkpoint refused: this pserver no longer holds the shard', {
          reason,
          err,
        });
      else logger.error('checkpoint failed; the previous one stays committed', { reason, err });
      this.options.onFailed?.();
      throw err;
    } finally {
      this.pools.give(buffers);
    }
  }

  /** The file the next checkpoint is a delta on, if it is to be one. */
  private nextParent(): ChainFile | undefined {
    const chain = this.deltaChain;
    if (!chain || this.options.shard.tables.size === 0) return undefined;
    if (chain.files.length - 1 >= this.options.deltasPerFull) return undefined;
    // Deltas stay under half of the full file, this one included: the chain never costs more to
    // read than 1.5 full files, and a delta as large as a full file is a full one.
    let next = 0;
    for (const { table } of this.options.shard.tables.values()) next += table.changedBytes;
    if (chain.deltaBytes + next > chain.fullBytes / 2) return undefined;
    return chain.files[chain.files.length - 1];
  }

  private extendChain(meta: CheckpointMeta): void {
    const [file] = chainOf(meta).slice(-1);
    if (meta.chain.length === 0)
      this.deltaChain = { files: [file!], fullBytes: meta.size, deltaBytes: 0 };
    else if (this.deltaChain) {
      this.deltaChain.files = [...this.deltaChain.files, file!];
      this.deltaChain.deltaBytes += meta.size;
    }
  }

  /**
   * Deletes the files of this shard's directory that no retained meta names — nor the checkpoint
   * of this index's old count that other indices still restore their share from (a reshape).
   */
  private async removeUnreferenced(): Promise<string[]> {
    const { root, shard, tenure } = this.options;
    const kept = await tenure.reshapeFilesToKeep();
    return removeUnreferenced(root, shard.index, [...tenure.checkpoints.checkpoints, ...kept]);
  }
}
