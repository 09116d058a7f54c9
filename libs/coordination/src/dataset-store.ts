import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import type { Leader } from './election';
import { CoordinationError } from './errors';
import type { JobKeys } from './keys';

/** Everything a job's dataset left in etcd, as written (the master gives the values meaning). */
export interface StoredDataset {
  spec: unknown;
  fileGroups: unknown[][];
  /** Task id → its latest stored state. */
  tasks: Map<number, unknown>;
  pass: number;
}

export interface DatasetStoreOptions {
  /** Puts per transaction: below etcd's --max-txn-ops (128). */
  maxOpsPerTxn: number;
  /** Transactions in flight at once (they never share a key). */
  maxInFlight: number;
  /** Keys per page when loading: keeps each range response small. */
  pageSize: number;
}

export const defaultDatasetStoreOptions: DatasetStoreOptions = {
  maxOpsPerTxn: 100,
  maxInFlight: 4,
  pageSize: 5_000,
};

interface Write {
  puts: [string, string][];
  /** Moves the pass: committed alone, after everything before it and before anything after. */
  barrier: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The dataset's keys (`data/…`): the spec, the file list in groups, one small key per task, the
 * pass. No value comes near etcd's request limit, so a dataset of millions of tasks fits.
 *
 * Every write is a transaction guarded by the leader's term. Writes queue in the order they were
 * made and leave the queue in batches (group commit: one transaction for what queued while
 * others were in flight), a few transactions at a time. A write waits for every earlier write of
 * the same keys, so each key's writes land in order; a write that moves the pass waits for
 * everything before it and holds back everything after it.
 */
export class DatasetStore {
  private readonly queue: Write[] = [];
  private inFlight = 0;
  /** Keys of the transactions in flight. */
  private readonly busy = new Set<string>();
  private barrierInFlight = false;

  constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly leader: Leader,
    private readonly logger: Logger,
    private readonly options: DatasetStoreOptions = defaultDatasetStoreOptions,
  ) {}

  /** Reads the whole dataset at one revision, page by page; undefined when none was set. */
  async load(): Promise<StoredDataset | undefined> {
    const specRange = await this.client.get(this.keys.datasetSpec).exec();
    const specKv = specRange.kvs[0];
    if (!specKv) return undefined;
    const revision = specRange.header.revision;
    const fileGroups: unknown[][] = [];
    for await (const [, value] of this.scan(this.keys.datasetFilesPrefix, revision))
      fileGroups.push(JSON.parse(value) as unknown[]);
    const tasks = new Map<number, unknown>();
    for await (const [key, value] of this.scan(this.keys.taskPrefix, revision))
      tasks.set(Number(key.slice(this.keys.taskPrefix.length)), JSON.parse(value));
    const passValue = await this.client.get(this.keys.pass).revision(revision).string();
    return {
      spec: JSON.parse(specKv.value.toString()),
      fileGroups,
      tasks,
      pass: passValue === null ? 0 : Number(passValue),
    };
  }

  /**
   * Writes a new dataset: the file groups, then the spec, which is created only if absent (the
   * spec is what makes a dataset exist, so groups left by a failed attempt are overwritten by the
   * next). False when a dataset was set already.
   */
  async create(spec: object, fileGroups: object[][]): Promise<boolean> {
    if (await this.client.get(this.keys.datasetSpec).exists()) return false;
    for (let g = 0; g < fileGroups.length; g += this.options.maxOpsPerTxn) {
      const puts = fileGroups
        .slice(g, g + this.options.maxOpsPerTxn)
        .map((group, i): [string, string] => [
          this.keys.datasetFiles(g + i),
          JSON.stringify(group),
        ]);
      await this.commit(puts);
    }
    const created = await this.guarded()
      .and(this.keys.datasetSpec, 'Create', '==', 0)
      .then(this.client.put(this.keys.datasetSpec).value(JSON.stringify(spec)))
      .commit();
    if (created.succeeded) return true;
    if (await this.client.get(this.keys.datasetSpec).exists()) return false;
    throw notLeader();
  }

  /**
   * Stores task states (and the pass, when it moved on). Resolves once they are committed, after
   * every earlier write of the same keys; rejects with MASTER_NOT_LEADER if this term has ended.
   */
  write(tasks: [id: number, state: object][], pass?: number): Promise<void> {
    const puts: [string, string][] = tasks.map(([id, state]) => [
      this.keys.task(id),
      JSON.stringify(state),
    ]);
    if (pass !== undefined) puts.push([this.keys.pass, String(pass)]);
    if (puts.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.queue.push({ puts, barrier: pass !== undefined, resolve, reject });
      this.pump();
    });
  }

  /** Starts transactions for queued writes while there is room in flight. */
  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && !this.barrierInFlight) {
      const batch = this.nextBatch();
      if (batch.length === 0) return;
      // Later puts of a key replace earlier ones: etcd refuses a key twice in one transaction.
      const puts = new Map(batch.flatMap((write) => write.puts));
      const barrier = batch.some((write) => write.barrier);
      this.inFlight++;
      this.barrierInFlight = barrier;
      for (const key of puts.keys()) this.busy.add(key);
      void this.commit([...puts])
        .then(
          () => batch.forEach((write) => write.resolve()),
          (err: unknown) => {
            this.logger.warn('dataset write failed', { error: (err as Error).message });
            batch.forEach((write) => write.reject(err));
          },
        )
        .finally(() => {
          this.inFlight--;
          if (barrier) this.barrierInFlight = false;
          for (const key of puts.keys()) this.busy.delete(key);
          this.pump();
        });
    }
  }

  /** Takes from the head of the queue what may go in one transaction now. */
  private nextBatch(): Write[] {
    const batch: Write[] = [];
    const keys = new Set<string>();
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (next.puts.some(([key]) => this.busy.has(key))) break;
      if (next.barrier && (this.inFlight > 0 || batch.length > 0)) break;
      const added = next.puts.filter(([key]) => !keys.has(key)).length;
      if (batch.length > 0 && keys.size + added > this.options.maxOpsPerTxn) break;
      this.queue.shift();
      batch.push(next);
      for (const [key] of next.puts) keys.add(key);
      if (next.barrier) break;
    }
    return batch;
  }

  /** One guarded transaction of puts (split if more than a transaction holds). */
  private async commit(puts: [string, string][]): Promise<void> {
    for (let i = 0; i < puts.length; i += this.options.maxOpsPerTxn) {
      const ops = puts
        .slice(i, i + this.options.maxOpsPerTxn)
        .map(([key, value]) => this.client.put(key).value(value));
      const result = await this.guarded()
        .then(...ops)
        .commit();
      if (!result.succeeded) throw notLeader();
    }
  }

  /** The keys under `prefix` at `revision`, in key order, a page at a time. */
  private async *scan(prefix: string, revision: string): AsyncGenerator<[string, string]> {
    const end = prefixEnd(prefix);
    let start = prefix;
    for (;;) {
      const page = await this.client
        .getAll()
        .inRange({ start, end })
        .revision(revision)
        .limit(this.options.pageSize)
        .exec();
      for (const kv of page.kvs) yield [kv.key.toString(), kv.value.toString()];
      if (!page.more || page.kvs.length === 0) return;
      start = `${page.kvs.at(-1)!.key.toString()}\0`;
    }
  }

  private guarded(): ReturnType<Etcd3['if']> {
    return this.client.if(this.leader.key, 'Create', '==', this.leader.revision);
  }
}

function notLeader(): CoordinationError {
  return new CoordinationError(
    'MASTER_NOT_LEADER',
    'this master is no longer the leader; ask again',
  );
}

/** The first key after every key that starts with `prefix` (etcd's range end for a prefix). */
function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}
