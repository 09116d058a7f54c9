import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import type { Logger } from '@pserver/logging';
import { consistencyFromStored, type JobConsistency } from './consistency';
import type { JobKeys } from './keys';
import { parseMoveDecision, parseReceiver } from './live-move';
import { parseLiveReshape, parseReshape, type LiveReshape, type PendingReshape } from './reshape';

/** A pserver registered under `pservers/<member>`. */
export interface RegisteredPserver {
  member: string;
  address: string;
  lease: string;
  createRevision: number;
  /** The shard it announced it serves (after recovering it), if any. */
  serving: { index: number; epoch: number } | undefined;
}

/**
 * An `assign/<i>` key: who holds index i, under which lease, since which revision (the epoch),
 * and the shard count and block size the index was assigned under. An assignment written without
 * them (an older master) has them undefined: the leader replaces it, a pserver never acts on it.
 */
export interface ShardAssignment {
  index: number;
  member: string;
  address: string;
  lease: string;
  /** The key's create revision: the shard epoch. */
  epoch: number;
  shardCount: number | undefined;
  blockSize: number | undefined;
}

/** What the master writes into `assign/<i>`. */
export interface AssignmentValue {
  member: string;
  address: string;
  shardCount: number;
  blockSize: number;
}

/**
 * A `replica/<i>/<member>` key: a pserver the master chose to keep a copy of shard i for the
 * primary of `primaryEpoch`, under the replica's own lease. `inSync` once the replica holds every
 * push that primary acknowledged (it writes it, when the primary says so): only such a replica
 * may be promoted.
 */
export interface ReplicaAssignment {
  index: number;
  member: string;
  address: string;
  lease: string;
  createRevision: number;
  primaryEpoch: number;
  inSync: boolean;
}

/** What `replica/<i>/<member>` holds. */
export interface ReplicaValue {
  member: string;
  address: string;
  primaryEpoch: number;
  inSync?: boolean;
}

/** What a pserver writes into `pservers/<member>`. */
export interface MemberValue {
  address: string;
  startedAtUnixMs: number;
  serving?: { index: number; epoch: number };
}

/** What the master reconciles and publishes, read from etcd. */
export interface JobState {
  desired: number | undefined;
  blockSize: number | undefined;
  /** Replicas kept of each shard besides its primary (0 or unset: none). */
  replicas: number;
  /** The job's consistency mode (ASYNC when the key is absent). */
  consistency: JobConsistency;
  pservers: RegisteredPserver[];
  assignments: ShardAssignment[];
  replicaAssignments: ReplicaAssignment[];
  initOwner: number | undefined;
  initDone: boolean;
  /** The job is finished (`finish/done`): nothing is assigned again. */
  finished: boolean;
  /** A change of the initialized job's shard count still being restored (`reshape`), if any. */
  reshape: PendingReshape | undefined;
  /** Why the `reshape` key, which exists, holds no record (then `reshape` is undefined). */
  corruptReshape: string | undefined;
  /** A change of the count asked while the job runs (`reshape/live`), its primaries handing back. */
  liveReshape: LiveReshape | undefined;
  /** The etcd revision the state was read at. */
  revision: number;
}

/** Reads the job's coordination keys in one transaction, so they are consistent with each other. */
export async function readJobState(client: Etcd3, keys: JobKeys): Promise<JobState> {
  const result = await client
    .if(keys.desired, 'Version', '>', -1)
    .then(
      client.get(keys.desired),
      client.get(keys.blockSize),
      client.getAll().prefix(keys.pserversPrefix),
      client.getAll().prefix(keys.assignPrefix),
      client.get(keys.initOwner),
      client.get(keys.initDone),
      client.get(keys.replicas),
      client.getAll().prefix(keys.replicaRoot),
      client.get(keys.consistency),
      client.get(keys.finished),
      client.get(keys.reshape),
      client.getAll().prefix(keys.reshapeRestoredPrefix),
      client.get(keys.liveReshape),
      client.getAll().prefix(keys.handedBackPrefix),
      client.getAll().prefix(keys.receiverPrefix),
      client.getAll().prefix(keys.copiedPrefix),
      client.getAll().prefix(keys.caughtUpPrefix),
      client.get(keys.moveDecision),
    )
    .commit();
  const ranges = result.responses.map((r) => r.response_range?.kvs ?? []);
  const single = (i: number): string | undefined => ranges[i]?.[0]?.value.toString();
  const reshape = parsePendingReshape(keys, ranges[10]?.[0], ranges[11] ?? []);
  const live = parsePendingLiveReshape(keys, ranges[12]?.[0], {
    handedBack: ranges[13] ?? [],
    receivers: ranges[14] ?? [],
    copied: ranges[15] ?? [],
    caughtUp: ranges[16] ?? [],
    decision: ranges[17]?.[0],
  });
  return {
    desired: optionalNumber(single(0)),
    blockSize: optionalNumber(single(1)),
    pservers: (ranges[2] ?? []).flatMap((kv) => parsePserver(keys, kv)),
    assignments: (ranges[3] ?? []).flatMap((kv) => parseAssignment(keys, kv)),
    initOwner: optionalNumber(single(4)),
    initDone: single(5) !== undefined,
    replicas: optionalNumber(single(6)) ?? 0,
    replicaAssignments: (ranges[7] ?? []).flatMap((kv) => parseReplica(keys, kv)),
    consistency: consistencyFromStored(single(8)),
    finished: single(9) !== undefined,
    ...reshape,
    liveReshape: live.liveReshape,
    corruptReshape: reshape.corruptReshape ?? live.corrupt,
    revision: Number(result.header.revision),
  };
}

/**
 * The pending reshape of a `reshape` key and its `reshape/restored/<i>` marks. A key that holds
 * no record is reported as corrupt, not thrown: the leader goes on reconciling, says so, and
 * leaves the key for an operator.
 */
function parsePendingReshape(
  keys: JobKeys,
  kv: IKeyValue | undefined,
  marks: IKeyValue[],
): Pick<JobState, 'reshape' | 'corruptReshape'> {
  if (!kv) return { reshape: undefined, corruptReshape: undefined };
  try {
    const restored = marks
      .flatMap((mark) => keys.restoredIndexOf(mark.key.toString()) ?? [])
      .sort((a, b) => a - b);
    return {
      reshape: {
        ...parseReshape(kv.value.toString()),
        revision: Number(kv.create_revision),
        restored,
      },
      corruptReshape: undefined,
    };
  } catch (err) {
    return { reshape: undefined, corruptReshape: (err as Error).message };
  }
}

/**
 * The live reshape of a `reshape/live` key with its marks: the old indices handed back, the
 * receivers, and what the old primaries said of the copies. A key that holds no record is
 * reported as corrupt, like `reshape`.
 */
function parsePendingLiveReshape(
  keys: JobKeys,
  kv: IKeyValue | undefined,
  marks: {
    handedBack: IKeyValue[];
    receivers: IKeyValue[];
    copied: IKeyValue[];
    caughtUp: IKeyValue[];
    decision: IKeyValue | undefined;
  },
): { liveReshape: LiveReshape | undefined; corrupt: string | undefined } {
  if (!kv) return { liveReshape: undefined, corrupt: undefined };
  /** The indices of `<prefix><i>` keys, ascending: those whose value is true, with `saidTrue`. */
  const indices = (kvs: IKeyValue[], prefix: string, saidTrue = false): number[] =>
    kvs
      .filter((mark) => !saidTrue || mark.value.toString() === 'true')
      .flatMap((mark) => keys.indexUnder(prefix, mark.key.toString()) ?? [])
      .sort((a, b) => a - b);
  try {
    return {
      liveReshape: {
        ...parseLiveReshape(kv.value.toString()),
        revision: Number(kv.create_revision),
        handedBack: indices(marks.handedBack, keys.handedBackPrefix),
        receivers: marks.receivers
          .flatMap((mark) => {
            const index = keys.indexUnder(keys.receiverPrefix, mark.key.toString());
            const member = parseReceiver(mark.value.toString())?.member;
            return index !== undefined && member !== undefined ? [{ index, member }] : [];
          })
          .sort((a, b) => a.index - b.index),
        copied: indices(marks.copied, keys.copiedPrefix, true),
        caughtUp: indices(marks.caughtUp, keys.caughtUpPrefix, true),
        decision: marks.decision && parseMoveDecision(marks.decision.value.toString()),
      },
      corrupt: undefined,
    };
  } catch (err) {
    return { liveReshape: undefined, corrupt: `reshape/live: ${(err as Error).message}` };
  }
}

function optionalNumber(value: string | undefined): number | undefined {
  return value === undefined ? undefined : Number(value);
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

function parsePserver(keys: JobKeys, kv: IKeyValue): RegisteredPserver[] {
  try {
    const value = JSON.parse(kv.value.toString()) as MemberValue;
    const serving = value.serving;
    return [
      {
        member: kv.key.toString().slice(keys.pserversPrefix.length),
        address: value.address,
        lease: kv.lease,
        createRevision: Number(kv.create_revision),
        serving:
          serving && Number.isSafeInteger(serving.index) && Number.isSafeInteger(serving.epoch)
            ? { index: serving.index, epoch: serving.epoch }
            : undefined,
      },
    ];
  } catch {
    return [];
  }
}

export function parseAssignment(keys: JobKeys, kv: IKeyValue): ShardAssignment[] {
  const index = keys.indexOf(kv.key.toString());
  if (index === undefined) return [];
  try {
    const value = JSON.parse(kv.value.toString()) as Partial<AssignmentValue>;
    return [
      {
        index,
        member: String(value.member),
        address: String(value.address),
        lease: kv.lease,
        epoch: Number(kv.create_revision),
        shardCount: positiveInteger(value.shardCount),
        blockSize: positiveInteger(value.blockSize),
      },
    ];
  } catch {
    return [];
  }
}

export function parseReplica(keys: JobKeys, kv: IKeyValue): ReplicaAssignment[] {
  const at = keys.replicaOf(kv.key.toString());
  if (!at) return [];
  try {
    const value = JSON.parse(kv.value.toString()) as Partial<ReplicaValue>;
    const primaryEpoch = positiveInteger(value.primaryEpoch);
    if (primaryEpoch === undefined || value.member !== at.member) return [];
    return [
      {
        index: at.index,
        member: at.member,
        address: String(value.address),
        lease: kv.lease,
        createRevision: Number(kv.create_revision),
        primaryEpoch,
        inSync: value.inSync === true,
      },
    ];
  } catch {
    return [];
  }
}

export interface JobWatcherOptions {
  /** Re-read everything this often even without events (events alone are not trusted). */
  relistIntervalMs: number;
  logger: Logger;
}

/**
 * How long after a change under the watched prefixes the state is read again. Each hop of a
 * live move's hand-over (hand-backs, the change, assignments, shards serving) waits this long in
 * the master, within the trainers' write pause: a few ms, not tens.
 */
const watchDebounceMs = 5;

/**
 * Level-triggered observation of the job's coordination keys: `onState` gets the whole state,
 * read again after every change under the watched prefixes (debounced), on a timer, and after the
 * watches break (compaction, etcd restart). Callers act on states, never on single events.
 */
export class JobWatcher {
  private watchers: Watcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;
  /** A read scheduled by a change has not begun yet. */
  private queued = false;
  private closed = false;
  private reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly onState: (state: JobState) => void | Promise<void>,
    private readonly options: JobWatcherOptions,
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => this.schedule(), this.options.relistIntervalMs);
    this.timer.unref();
  }

  /** Reads the state now (after any read in progress) and hands it to `onState`. */
  refresh(): Promise<void> {
    this.reading = this.reading.then(() => this.readOnce());
    return this.reading;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.pending);
    await this.cancelWatches();
    await this.reading;
  }

  /**
   * Reads again `watchDebounceMs` after a change: the events of one transaction come apart, one
   * watch each, within a few ms. No read is added while one waits to begin: that one sees the
   * change too (a change during a read brings exactly one more).
   */
  private schedule(): void {
    if (this.closed || this.pending || this.queued) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.queued = true;
      void this.refresh();
    }, watchDebounceMs);
  }

  private async readOnce(): Promise<void> {
    this.queued = false;
    if (this.closed) return;
    try {
      const state = await readJobState(this.client, this.keys);
      if (this.watchers.length === 0) await this.watchFrom(state.revision + 1);
      if (!this.closed) await this.onState(state);
    } catch (err) {
      if (!this.closed) this.options.logger.warn('reading the job state failed; retrying', { err });
      await this.cancelWatches();
    }
  }

  private async watchFrom(revision: number): Promise<void> {
    const watched: ['prefix' | 'key', string][] = [
      ['prefix', `${this.keys.root}config/`],
      ['prefix', this.keys.pserversPrefix],
      ['prefix', this.keys.assignPrefix],
      ['prefix', this.keys.replicaRoot],
      ['prefix', `${this.keys.root}init/`],
      ['prefix', `${this.keys.root}finish/`],
      // The record and its marks apart: the master's role may read just these, not `reshape*`.
      ['key', this.keys.reshape],
      ['prefix', this.keys.reshapeRestoredPrefix],
      // A live move rolled back: the leader ends it.
      ['key', this.keys.moveDecision],
    ];
    for (const [kind, key] of watched) {
      const builder = this.client.watch();
      const watcher = await (kind === 'prefix' ? builder.prefix(key) : builder.key(key))
        .startRevision(String(revision))
        .create();
      watcher.on('data', () => this.schedule());
      // A broken watch (compaction, etcd restarted): list again and watch from there.
      watcher.on('error', () => void this.cancelWatches().then(() => this.schedule()));
      this.watchers.push(watcher);
    }
  }

  private async cancelWatches(): Promise<void> {
    const watchers = this.watchers;
    this.watchers = [];
    await Promise.all(watchers.map((w) => w.cancel().catch(() => undefined)));
  }
}
