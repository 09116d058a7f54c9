import {
  assign,
  assignReplica,
  completeLiveReshape,
  rollBackLiveReshape,
  DatasetStore,
  describeConsistency,
  finishReshape,
  JobWatcher,
  MasterTerm,
  readJobState,
  planAssignments,
  planReplicas,
  retire,
  staleAssignments,
  TrainerSessions,
  type EtcdClient,
  type JobKeys,
  type JobConsistency,
  type JobState,
  type Leader,
} from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import { DatasetService } from '../dataset/dataset-service';
import { clusterViewOf, sameView, type View } from './cluster-view';

export interface LeaderRoleOptions {
  job: string;
  desiredPservers: number | undefined;
  blockSize: number;
  /** Replicas of each shard, written to the job's config when absent. */
  replicas: number;
  /** The consistency mode, written to the job's config when absent. */
  consistency: JobConsistency;
  sessionTtlMs: number;
  relistIntervalMs: number;
  logger: Logger;
  /** Called for each assignment committed (metrics). */
  onAssigned?: (kind: 'spare' | 'promotion' | 'replica') => void;
  /** A trainer session ended without a KeepAlive within its TTL. */
  onSessionExpired?: () => void;
}

/**
 * What the master does while it leads: writes the job's config if absent, reconciles assignments
 * from whole job states (level-triggered), keeps the trainer sessions, runs the init election,
 * hands out the dataset's tasks and publishes the view. Every write is guarded by the term (`MasterTerm`).
 */
export class LeaderRole {
  readonly sessions: TrainerSessions;
  readonly term: MasterTerm;
  readonly dataset: DatasetService;
  private watcher: JobWatcher | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private current: JobState | undefined;
  private published: View | undefined;
  /** The corrupt `reshape` record last said so in the log (once per problem, not per state). */
  private reportedCorruptReshape: string | undefined;
  private readonly viewListeners = new Set<(view: View) => void>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly client: EtcdClient,
    private readonly keys: JobKeys,
    readonly leader: Leader,
    private readonly options: LeaderRoleOptions,
  ) {
    this.term = new MasterTerm(client, keys, leader);
    this.sessions = new TrainerSessions(
      client,
      keys,
      leader,
      options.sessionTtlMs,
      options.logger.child({ component: 'sessions' }),
    );
    this.dataset = new DatasetService(
      new DatasetStore(client, keys, leader, options.logger),
      this.sessions,
      options.logger.child({ component: 'dataset' }),
    );
    // A trainer that dies while initializing frees the init election for another; the tasks it
    // held go back at once.
    this.sessions.onEnd((id) => this.term.releaseInitOwner(id));
    this.sessions.onEnd((id) => this.dataset.release(id));
    this.sessions.onEnd((_, expired) => {
      if (expired) options.onSessionExpired?.();
    });
  }

  async start(): Promise<void> {
    await this.term.writeConfigIfAbsent({
      desired: this.options.desiredPservers,
      blockSize: this.options.blockSize,
      replicas: this.options.replicas,
      consistency: this.options.consistency,
    });
    await this.sessions.load();
    await this.dataset.load();
    this.watcher = new JobWatcher(this.client, this.keys, (state) => this.onState(state), {
      relistIntervalMs: this.options.relistIntervalMs,
      logger: this.options.logger,
    });
    await this.watcher.start();
    const fixed = this.state.consistency;
    if (describeConsistency(fixed) !== describeConsistency(this.options.consistency))
      this.options.logger.warn(
        `the job runs --consistency ${describeConsistency(fixed)}, fixed when it first started; --consistency ${describeConsistency(this.options.consistency)} is ignored`,
      );
    const sweepMs = Math.max(100, this.options.sessionTtlMs / 4);
    this.sweeper = setInterval(() => {
      void this.sessions.sweep().catch(() => undefined);
      void this.dataset.expire().catch(() => undefined);
    }, sweepMs);
    this.sweeper.unref();
  }

  /** Aborted when this role stops: streams that follow it end then. */
  get ended(): AbortSignal {
    return this.stopping.signal;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.sweeper);
    await this.watcher?.close();
  }

  /** The latest job state (after start). */
  get state(): JobState {
    if (!this.current) throw new Error('LeaderRole: not started');
    return this.current;
  }

  get view(): View {
    return this.published ?? clusterViewOf(this.options.job, this.state);
  }

  /** Calls `listener` with every new view; returns the unsubscribe function. */
  subscribe(listener: (view: View) => void): () => void {
    this.viewListeners.add(listener);
    return () => this.viewListeners.delete(listener);
  }

  /** Reads the job state again now (after a write of this master, so callers see it). */
  refresh(): Promise<void> {
    return this.watcher?.refresh() ?? Promise.resolve();
  }

  private async onState(state: JobState): Promise<void> {
    this.current = state;
    if (state.corruptReshape !== this.reportedCorruptReshape) {
      this.reportedCorruptReshape = state.corruptReshape;
      if (state.corruptReshape !== undefined)
        this.options.logger.error(
          `the job's reshape record (${this.keys.reshape}) is corrupt: ${state.corruptReshape}; no count change can be made or ended until an operator repairs or deletes it`,
        );
    }
    // A finished job's pservers leave for good: their indices are not assigned again.
    if (!state.finished && (await this.reconcile(state))) {
      void this.refresh();
      return;
    }
    const view = clusterViewOf(this.options.job, state, this.published);
    if (this.published && sameView(this.published, view)) return;
    this.published = view;
    for (const listener of this.viewListeners) listener(view);
  }

  /**
   * Ends a complete reshape, retires stale assignments and makes new ones; true if anything was
   * written.
   */
  private async reconcile(state: JobState): Promise<boolean> {
    const term = { client: this.client, keys: this.keys, leader: this.leader };
    // An old primary decided to roll the live change back: the job serves on at its count.
    if (state.liveReshape && (await rollBackLiveReshape(term, state, this.options.logger)))
      return true;
    // Every index of the old count was handed back: the count changes as for a job that is down.
    if (
      state.liveReshape &&
      (await completeLiveReshape(
        term,
        () => readJobState(this.client, this.keys),
        state,
        this.options.logger,
      ))
    )
      return true;
    // Every index of the new count restored its share: the old checkpoints are free to go.
    if (state.reshape && (await finishReshape(term, state.reshape, this.options.logger)))
      return true;
    // The shard count is part of every assignment: one made under another count (or by an older
    // master, without one) is deleted first, and its index assigned again with a new epoch.
    let retired = false;
    for (const stale of staleAssignments(state)) {
      if (
        await retire(
          this.client,
          this.keys,
          this.leader,
          stale,
          state.desired!,
          this.options.logger,
        )
      )
        retired = true;
    }
    if (retired) return true;
    let assigned = false;
    const planned = planAssignments(state);
    for (const p of planned) {
      if (await assign(this.client, this.keys, this.leader, p, this.options.logger)) {
        assigned = true;
        this.options.onAssigned?.(p.promotes ? 'promotion' : 'spare');
      }
    }
    // Replicas from the spares left, for the primaries of this state (a new primary's come with
    // the state that shows it).
    for (const r of planReplicas(state, planned)) {
      if (await assignReplica(this.client, this.keys, this.leader, r, this.options.logger)) {
        assigned = true;
        this.options.onAssigned?.('replica');
      }
    }
    // New assignments show up in the next state: publish that one.
    return assigned;
  }
}
