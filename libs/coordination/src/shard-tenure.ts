import type { CheckpointMeta, MetaStore } from '@pserver/checkpoint';
import { CoordinationError } from './errors';

/** What a tenure is of: one shard of one count, block size and epoch. */
export interface TenureFacts {
  index: number;
  shardCount: number;
  /** Elements per block of a sliced tensor; 0 when unknown (standalone). */
  blockSize: number;
  epoch: number;
}

/** A change of the job's shard count while it was down, pending until every new index restored its share. */
export interface Reshape {
  /** The shard count the sources were written at. */
  readonly from: number;
  /** The count the job serves at now. */
  readonly to: number;
  /** Each old index's latest committed checkpoint when the count changed (absent: none). */
  readonly sources: ReadonlyMap<number, CheckpointMeta>;
  /**
   * A live change: the indices whose receiver holds their share in memory, every push of every old
   * index in it (`index → member`). That member serves it as it is; the others restore theirs.
   */
  readonly moved?: ReadonlyMap<number, string>;
}

/**
 * The one authority on whether this process may act on its shard (DESIGN section 5). Everything
 * that changes the shard, answers from it or commits its checkpoint metas asks the tenure, and
 * nothing else: the lease deadline, the assignment watch, the epoch check and the fenced commit
 * all end the same tenure, and its holders are told once.
 */
export interface ShardTenure extends Readonly<TenureFacts> {
  readonly mode: 'standalone' | 'cluster';
  /** Synchronous: whether the shard may be acted on now (the lease deadline, nothing lost). */
  holds(): boolean;
  /** Throws `TenureLostError` unless `holds()`; call it right before acting, with no await between. */
  require(): void;
  /**
   * Whether the tenure is still this process's by a linearizable read (cluster: `assign/<i>`
   * with this member, lease and epoch). A read that says no ends the tenure. Standalone: `holds()`.
   */
  confirm(): Promise<boolean>;
  /** Ends the tenure (idempotent): from now on `holds()` is false and holders are told. */
  lose(reason: string): void;
  /** Why the tenure ended, once it has. */
  readonly lost: TenureLostError | undefined;
  /** Calls `listener` once when the tenure ends (at once if it already has). */
  onLost(listener: (error: TenureLostError) => void): void;
  /** The shard's checkpoint metas; a commit is refused with `TenureLostError` once lost. */
  readonly checkpoints: MetaStore;
  /**
   * Tells the cluster the shard is served now (recovery done), trying again while etcd does not
   * answer; gives up, without an error, once the tenure ends or is closed. Standalone: nothing
   * to tell.
   */
  announceServing(): Promise<void>;
  /** Cluster: the reshape pending when this tenure began, when this index has not restored its share of it yet (no `reshape/restored/<i>`, and the tenure's shard count is the reshape's `to`); undefined otherwise and standalone. */
  readonly reshape: Reshape | undefined;
  /** Records that this index restored its share of the pending reshape and committed it (`reshape/restored/<i>` = its epoch), fenced like a checkpoint commit (TenureLostError when the assignment is no longer this tenure's). Standalone: resolves at once. */
  markRestored(): Promise<void>;
  /** The source checkpoint of this index whose files must not be deleted yet: `reshape.sources.get(index)` while the `reshape` key still exists (read fresh from etcd), else none. Standalone: none. */
  reshapeFilesToKeep(): Promise<readonly CheckpointMeta[]>;
  /** Stops watching and `announceServing` (a graceful stop); does not end the tenure. */
  close(): Promise<void>;
}

/** This process may no longer act on its shard: it was replaced or cannot trust its lease. */
export class TenureLostError extends CoordinationError {
  constructor(
    readonly index: number,
    readonly reason: string,
  ) {
    super('PSERVER_FENCED', `shard ${index}: fenced, ${reason}; this pserver no longer serves it`);
  }
}

/**
 * The lost-once bookkeeping and the guarded meta store both implementations share. Without a
 * reshape given, it has none to restore: `markRestored` and `reshapeFilesToKeep` do nothing.
 */
export abstract class TenureBase implements ShardTenure {
  abstract readonly mode: 'standalone' | 'cluster';
  readonly index: number;
  readonly shardCount: number;
  readonly blockSize: number;
  readonly epoch: number;
  readonly checkpoints: MetaStore;
  readonly reshape: Reshape | undefined;
  private lostError: TenureLostError | undefined;
  private readonly listeners = new Set<(error: TenureLostError) => void>();

  protected constructor(facts: TenureFacts, store: MetaStore, reshape?: Reshape) {
    this.index = facts.index;
    this.shardCount = facts.shardCount;
    this.blockSize = facts.blockSize;
    this.epoch = facts.epoch;
    this.checkpoints = new GuardedMetaStore(this, store);
    this.reshape = reshape;
  }

  get lost(): TenureLostError | undefined {
    return this.lostError;
  }

  holds(): boolean {
    return this.lostError === undefined && this.stillTrusted();
  }

  require(): void {
    if (!this.holds()) throw this.lostError ?? new TenureLostError(this.index, 'the tenure ended');
  }

  abstract confirm(): Promise<boolean>;
  abstract announceServing(): Promise<void>;
  abstract close(): Promise<void>;

  markRestored(): Promise<void> {
    return Promise.resolve();
  }

  reshapeFilesToKeep(): Promise<readonly CheckpointMeta[]> {
    return Promise.resolve([]);
  }

  lose(reason: string): void {
    if (this.lostError) return;
    const error = new TenureLostError(this.index, reason);
    this.lostError = error;
    this.ended();
    for (const listener of this.listeners) listener(error);
    this.listeners.clear();
  }

  onLost(listener: (error: TenureLostError) => void): void {
    if (this.lostError) listener(this.lostError);
    else this.listeners.add(listener);
  }

  /** The synchronous check beyond `lost` (the lease deadline); may call `lose`. */
  protected stillTrusted(): boolean {
    return true;
  }

  /** Called once when the tenure ends (stop watching); nothing to stop by default. */
  protected ended(): void {
    return;
  }
}

/** A meta store that commits only while the tenure holds, and ends it on a fenced commit. */
class GuardedMetaStore implements MetaStore {
  constructor(
    private readonly tenure: ShardTenure,
    private readonly inner: MetaStore,
  ) {}

  get checkpoints(): readonly CheckpointMeta[] {
    return this.inner.checkpoints;
  }

  get everCommitted(): boolean {
    return this.inner.everCommitted;
  }

  commit(meta: CheckpointMeta, retain: number): Promise<readonly CheckpointMeta[]> {
    return this.guarded(() => this.inner.commit(meta, retain));
  }

  forget(paths: readonly string[]): Promise<void> {
    return this.guarded(() => this.inner.forget(paths));
  }

  private async guarded<T>(write: () => Promise<T>): Promise<T> {
    this.tenure.require();
    try {
      return await write();
    } catch (err) {
      if (err instanceof TenureLostError) {
        this.tenure.lose(err.reason);
        throw this.tenure.lost ?? err;
      }
      throw err;
    }
  }
}
