import type { ManagedProcess } from '@pserver/local-cluster';
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

export type ChaosEvent =
  | { kind: 'killed'; failure: Failure }
  | { kind: 'taken over'; failure: Failure }
  | { kind: 'resumed'; failure: Failure };

/** What the chaos needs of a process: to kill it, and its latest line with a message. */
export type ChaosProcess = Pick<ManagedProcess, 'name' | 'pid' | 'signal' | 'lastLog'>;

/** What the chaos needs of the cluster (a `LocalCluster`): who serves each shard, who leads. */
export interface ChaosCluster {
  serving(): Map<number, { pserver: { process: ChaosProcess }; epoch: number }>;
  leadingMaster(): { process: ChaosProcess } | undefined;
}

const logTime = (entry: Record<string, unknown> | undefined): number =>
  entry ? Date.parse(String(entry.time)) : NaN;

/** When in the run (the share of it done) each kill comes: the first at 40 %, the second at 65 %. */
const killAt = [0.4, 0.65];

/**
 * The demo's chaos: `kill -9` of the pserver serving one shard when the run is 40 % done, then
 * (by default) of the leading master at 65 %; then it watches the logs and the trainers' steps
 * for the recovery.
 */
export class Chaos {
  readonly failures: Failure[] = [];
  private readonly plan: { at: number; target: Failure['target'] }[];

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly progress: TrainingProgress,
    /** The shard whose pserver is killed. */
    private readonly victimIndex: number,
    private readonly onEvent: (event: ChaosEvent) => void,
    targets: readonly Failure['target'][] = ['pserver', 'master'],
  ) {
    this.plan = targets.slice(0, killAt.length).map((target, k) => ({ at: killAt[k]!, target }));
  }

  /** Injects what is due and notes recoveries; called on every tick of the demo's loop. */
  tick(now = Date.now()): void {
    const next = this.plan[0];
    if (next && this.progress.fraction() >= next.at) {
      const failure = next.target === 'pserver' ? this.killPserver(now) : this.killLeader(now);
      if (failure) {
        this.plan.shift();
        this.failures.push(failure);
        this.onEvent({ kind: 'killed', failure });
      }
    }
    for (const failure of this.failures) this.watch(failure);
  }

  private killPserver(now: number): Failure | undefined {
    const served = this.cluster.serving().get(this.victimIndex);
    if (!served) return undefined;
    served.pserver.process.signal('SIGKILL');
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
