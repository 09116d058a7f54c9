import type { Etcd3, Watcher } from 'etcd3';
import type { Logger } from '@pserver/logging';
import type { JobKeys } from './keys';
import type { TrainerValue } from './trainer-sessions';

/**
 * The job's trainers with a live session, as pservers see them: the `trainers/<id>` keys, which
 * the leading master writes at registration and deletes when a session ends, but observers
 * (clients that never take steps). The roster of SYNC and SSP steps in a cluster job. Level-triggered like `JobWatcher`: the whole prefix is read
 * again after every change, on a timer and after a broken watch, and listeners are told only
 * when the members differ.
 */
export class TrainerRoster {
  readonly countsFromStart = false;
  private ids: number[] = [];
  private readonly listeners = new Set<() => void>();
  private watcher: Watcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;
  private reading: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly relistIntervalMs: number,
    private readonly logger: Logger,
  ) {}

  /** Reads the roster and watches it. */
  static async open(
    client: Etcd3,
    keys: JobKeys,
    options: { relistIntervalMs: number; logger: Logger },
  ): Promise<TrainerRoster> {
    const roster = new TrainerRoster(client, keys, options.relistIntervalMs, options.logger);
    await roster.refresh();
    roster.timer = setInterval(() => roster.schedule(), roster.relistIntervalMs);
    roster.timer.unref();
    return roster;
  }

  /** The members, ascending. */
  get members(): readonly number[] {
    return this.ids;
  }

  has(trainerId: number): boolean {
    return this.ids.includes(trainerId);
  }

  /**
   * Reads the roster again now (a linearizable read): `trainerId` may have just registered.
   * Rejects when etcd cannot be read.
   */
  async confirm(trainerId: number): Promise<boolean> {
    await this.refresh();
    return this.has(trainerId);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.pending);
    await this.watcher?.cancel().catch(() => undefined);
    await this.reading;
  }

  /** Reads the roster after any read in progress; rejects when this read fails. */
  private refresh(): Promise<void> {
    const read = this.reading.then(() => this.readOnce());
    this.reading = read.catch(() => undefined);
    return read;
  }

  private schedule(): void {
    if (this.closed || this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      // A failed read was logged; the next change or the timer reads again.
      this.refresh().catch(() => undefined);
    }, 20);
  }

  private async readOnce(): Promise<void> {
    if (this.closed) return;
    try {
      const range = await this.client.getAll().prefix(this.keys.trainersPrefix).exec();
      if (!this.watcher) await this.watchFrom(Number(range.header.revision) + 1);
      const ids = range.kvs
        .filter((kv) => kv.key.toString() !== this.keys.nextTrainerId && !isObserver(kv.value))
        .map((kv) => Number(kv.key.toString().slice(this.keys.trainersPrefix.length)))
        .filter((id) => Number.isSafeInteger(id) && id > 0)
        .sort((a, b) => a - b);
      if (ids.length === this.ids.length && ids.every((id, i) => id === this.ids[i])) return;
      const joined = ids.filter((id) => !this.ids.includes(id));
      const left = this.ids.filter((id) => !ids.includes(id));
      this.ids = ids;
      this.logger.info('trainer roster changed', { members: ids.length, joined, left });
      for (const listener of this.listeners) listener();
    } catch (err) {
      if (this.closed) return;
      this.logger.warn('reading the trainer roster failed; retrying', { err });
      await this.cancelWatch();
      throw err;
    }
  }

  private async watchFrom(revision: number): Promise<void> {
    const watcher = await this.client
      .watch()
      .prefix(this.keys.trainersPrefix)
      .startRevision(String(revision))
      .create();
    watcher.on('data', () => this.schedule());
    // A broken watch (compaction, etcd restarted): list again and watch from there.
    watcher.on('error', () => void this.cancelWatch().then(() => this.schedule()));
    this.watcher = watcher;
  }

  private async cancelWatch(): Promise<void> {
    const watcher = this.watcher;
    this.watcher = undefined;
    await watcher?.cancel().catch(() => undefined);
  }
}

function isObserver(value: Buffer): boolean {
  try {
    return (JSON.parse(value.toString()) as Partial<TrainerValue>).observer === true;
  } catch {
    return false;
  }
}
