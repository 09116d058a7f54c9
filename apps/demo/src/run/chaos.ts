import type { ManagedProcess } from '@pserver/local-cluster';
import type { LiveGrowth } from './live-growth';
import type { TrainingProgress } from './training-progress';

/** A failure the demo injected, and what it has seen of the recovery so far (ms since the epoch). */
export interface Failure {
  target: 'pserver' | 'master';
  /** The process killed, its pid, and for a pserver the shard it served at which epoch. */
  victim: string;
  pid: number;
  index?: number;
  epochBefore?: number;
  killedAt: number;
  /** Another process took over: the spare serving the shard at a new epoch, or a new leader. */
  takenOverAt?: number;
  takenOverBy?: string;
  epochAfter?: number;
  /** The checkpoint the spare restored: updates it held, and how long reading it took. */
  restoredUpdates?: number;
  restoreMs?: number;
  /** The shard was taken over by its replica, promoted: nothing was restored. */
  promoted?: boolean;
  /**
   * Every trainer had completed a step after the takeover: `resumedAt - killedAt` is the time
   * lost. Not "a step after the kill": after a master kill the trainers finish the tasks they
   * hold without a master (some 50 ms of work) and only then wait for the new leader's tasks.
   */
  resumedAt?: number;
}

export interface FailureEvent {
  kind: 'killed' | 'taken over' | 'resumed';
  failure: Failure;
}

/** What the chaos kills: the pserver of one shard, or the leading master. */
export type KillTarget = Failure['target'];

/** One step of the chaos: the job grown by a shard while it trains, or a kill. */
export type ChaosAction = 'grow' | KillTarget;

/** What the chaos needs of a process: to kill it, and its latest line with a message. */
export type ChaosProcess = Pick<ManagedProcess, 'name' | 'pid' | 'signal' | 'lastLog'>;

/** What the chaos needs of the cluster (a `LocalCluster`): who serves each shard, who leads. */
export interface ChaosCluster {
  serving(): Map<number, { pserver: { process: ChaosProcess }; epoch: number }>;
  leadingMaster(): { process: ChaosProcess } | undefined;
}

const logTime = (entry: Record<string, unknown> | undefined): number =>
  entry ? Date.parse(String(entry.time)) : NaN;

/** When in the run (the share of it done) the growth comes, and each kill after it. */
const growAt = 0.2;
const killAt = [0.4, 0.65];

/**
 * The chaos's steps in order, each with the share of the run done when it is due: the growth at
 * 20 % (when asked for), then the kills named, the first at 40 %, the second at 65 %. The growth
 * comes first so that the kills strike the job at its new count, a spare left for the failover.
 */
export function chaosPlan(
  kills: readonly KillTarget[],
  grow: boolean,
): { at: number; action: ChaosAction }[] {
  return [
    ...(grow ? [{ at: growAt, action: 'grow' as const }] : []),
    ...kills.slice(0, killAt.length).map((action, k) => ({ at: killAt[k]!, action })),
  ];
}

export interface ChaosOptions {
  cluster: ChaosCluster;
  progress: TrainingProgress;
  /** The shard whose pserver is killed. */
  victimIndex: number;
  onEvent: (event: FailureEvent) => void;
  /** What is killed, in order (default: a pserver, then the leading master). */
  kills?: readonly KillTarget[];
  /** The job grown by a shard before the kills (it tells its own events). */
  growth?: LiveGrowth;
  /**
   * Replicas of each shard: the pserver is killed only once its shard has a replica in sync. A
   * shard's primary that just took it (after the growth, or a failover) is its only copy until
   * its replica caught up; a kill then loses every copy, which no replica count can survive.
   */
  replicas?: number;
}

/**
 * The demo's chaos: the job grown by one shard while it trains when the run is 20 % done, then
 * `kill -9` of the pserver serving one shard at 40 %, then (by default) of the leading master at
 * 65 %; it watches the logs and the trainers' steps for each recovery. A step is due only once
 * training resumed after the one before: each one's cost is measured alone.
 */
export class Chaos {
  readonly failures: Failure[] = [];
  readonly growth: LiveGrowth | undefined;
  private readonly cluster: ChaosCluster;
  private readonly progress: TrainingProgress;
  private readonly victimIndex: number;
  private readonly onEvent: (event: FailureEvent) => void;
  private readonly plan: { at: number; action: ChaosAction }[];
  private readonly replicas: number;

  constructor(options: ChaosOptions) {
    this.cluster = options.cluster;
    this.progress = options.progress;
    this.victimIndex = options.victimIndex;
    this.onEvent = options.onEvent;
    this.growth = options.growth;
    this.replicas = options.replicas ?? 0;
    this.plan = chaosPlan(options.kills ?? ['pserver', 'master'], this.growth !== undefined);
  }

  /** Injects what is due and notes recoveries; called on every tick of the demo's loop. */
  tick(now = Date.now()): void {
    const next = this.plan[0];
    if (next && this.progress.fraction() >= next.at && this.settled()) {
      if (next.action === 'grow') {
        this.growth!.begin();
        this.plan.shift();
      } else {
        const failure = next.action === 'pserver' ? this.killPserver(now) : this.killLeader(now);
        if (failure) {
          this.plan.shift();
          this.failures.push(failure);
          this.onEvent({ kind: 'killed', failure });
        }
      }
    }
    this.growth?.tick();
    for (const failure of this.failures) this.watch(failure);
  }

  /** Waits for the growth's work under way (its audit's read-back); rejects with its failure. */
  async finish(): Promise<void> {
    await this.growth?.finish();
  }

  /** Every step so far is over: training resumed after it. */
  private settled(): boolean {
    const growth = this.growth;
    return (
      this.failures.every((f) => f.resumedAt !== undefined) && (!growth?.begun || growth.settled)
    );
  }

  private killPserver(now: number): Failure | undefined {
    const served = this.cluster.serving().get(this.victimIndex);
    if (!served) return undefined;
    const { process } = served.pserver;
    const inSync = logTime(process.lastLog('a replica is in sync'));
    if (this.replicas > 0 && !(inSync >= logTime(process.lastLog('serving')))) return undefined;
    process.signal('SIGKILL');
    return {
      target: 'pserver',
      victim: served.pserver.process.name,
      pid: served.pserver.process.pid,
      index: this.victimIndex,
      epochBefore: served.epoch,
      killedAt: now,
    };
  }

  private killLeader(now: number): Failure | undefined {
    const leader = this.cluster.leadingMaster();
    if (!leader) return undefined;
    leader.process.signal('SIGKILL');
    return {
      target: 'master',
      victim: leader.process.name,
      pid: leader.process.pid,
      killedAt: now,
    };
  }

  private watch(failure: Failure): void {
    if (failure.takenOverAt === undefined) {
      if (failure.target === 'pserver') this.watchShard(failure);
      else this.watchLeader(failure);
      if (failure.takenOverAt !== undefined) this.onEvent({ kind: 'taken over', failure });
    }
    if (failure.takenOverAt !== undefined && failure.resumedAt === undefined) {
      failure.resumedAt = this.progress.resumedAfter(failure.takenOverAt);
      if (failure.resumedAt !== undefined) this.onEvent({ kind: 'resumed', failure });
    }
  }

  private watchShard(failure: Failure): void {
    const served = this.cluster.serving().get(failure.index!);
    if (!served || served.epoch <= failure.epochBefore!) return;
    const restored = served.pserver.process.lastLog('recovered the shard from a checkpoint');
    const serving = served.pserver.process.lastLog('serving');
    failure.takenOverAt = logTime(serving);
    if (serving?.promoted !== undefined) failure.promoted = true;
    failure.takenOverBy = served.pserver.process.name;
    failure.epochAfter = served.epoch;
    if (restored) {
      failure.restoredUpdates = Number(restored.updatesApplied);
      failure.restoreMs = Number(restored.ms);
    }
  }

  private watchLeader(failure: Failure): void {
    const leader = this.cluster.leadingMaster();
    if (!leader) return;
    const leading = logTime(leader.process.lastLog('leading'));
    if (!(leading >= failure.killedAt)) return; // an old line: no new leader yet
    failure.takenOverAt = leading;
    failure.takenOverBy = leader.process.name;
  }
}
