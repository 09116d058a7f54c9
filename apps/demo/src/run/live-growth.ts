import type { ManagedProcess } from '@pserver/local-cluster';
import type { AuditResult } from './ack-audit';
import type { Served } from './serving-now';
import type { TrainingProgress } from './training-progress';

/** The job grown by one shard while it trains, and what the demo has seen of it so far. */
export interface Growth {
  /** The shard counts before and after. */
  from: number;
  to: number;
  /** The pservers started before the ask: the new shards', and a spare left for a failover. */
  started: { name: string; pid: number }[];
  /** The master that took the ask, and when the demo asked (ms since the epoch). */
  askedOf?: string;
  askedAt?: number;
  /** When the last primary of the old count handed its shard back. */
  handedBackAt?: number;
  /**
   * When the first primary of the old count refused pushes to hand its shard back (its hand-back
   * line's time less its `pauseMs`): `resumedAt - refusedAt` is the trainers' write pause.
   */
  refusedAt?: number;
  /** Every index of the new count serving its restored share: the latest of their lines. */
  servedAt?: number;
  /** The longest restore of a share from the old checkpoints, in ms (a share not copied live). */
  restoreMs?: number;
  /** How many of the new shards took the share a receiver copied live (the others restored). */
  moved?: number;
  /**
   * Every trainer had completed a step after `servedAt`: `resumedAt - askedAt` is what the
   * growth cost training. Not "a step after the ask": a trainer's step that the shards took
   * before their hand-back is no sign that training goes on at the new count.
   */
  resumedAt?: number;
  /** Every update acknowledged until training resumed, read back at the new count. */
  audit?: AuditResult;
}

export type GrowthEvent = {
  kind: 'growth asked' | 'growth served' | 'growth resumed' | 'growth audited';
  growth: Growth;
};

/** What the growth reads of a pserver: its latest line of a message. */
export type LoggingProcess = Pick<ManagedProcess, 'lastLog'>;

/** What a growth does to the job (the demo's cluster; a fake in tests). */
export interface GrowthHost {
  /** The pservers running now: primaries, replicas and spares. */
  runningPservers(): number;
  /** Starts one more pserver; resolves once it waits as a spare, registered. */
  startSpare(): Promise<{ name: string; pid: number }>;
  /** Sets the job's shard count through the masters; resolves with the master that took it. */
  askShardCount(count: number): Promise<string>;
  /** Who serves each index now (`servingNow`). */
  serving(): Map<number, Served<{ process: LoggingProcess }>>;
  /** Every pserver started, running or not: their hand-back lines. */
  pserverProcesses(): LoggingProcess[];
}

export interface LiveGrowthOptions {
  /** The shard count it grows from, by one. */
  from: number;
  /** Replicas of each shard: each new shard needs one more pserver each. */
  replicas: number;
  /** Reads back every update the demo's audit was acknowledged so far (an audited run). */
  audit?: () => Promise<AuditResult>;
}

const logTime = (entry: Record<string, unknown> | undefined): number =>
  entry ? Date.parse(String(entry.time)) : NaN;

/**
 * The job grown from `from` to `from + 1` shards while it trains (`SetDesiredShards` on the
 * leader): first the pservers the new count needs are started — one more per shard copy, and one
 * more so that a spare is left for a failover afterwards — then the count is asked, and the
 * pservers' logs and the trainers' steps are watched until training goes on at the new count.
 * Started by `begin`, watched on every `tick` of the demo's loop like the chaos's kills.
 */
export class LiveGrowth {
  readonly growth: Growth;
  private readonly replicas: number;
  private readonly audit: (() => Promise<AuditResult>) | undefined;
  private asked = false;
  /** The asynchronous work under way (starting pservers, the ask, the audit's read-back). */
  private work: Promise<void> = Promise.resolve();
  private failure: unknown;

  constructor(
    private readonly host: GrowthHost,
    private readonly progress: TrainingProgress,
    private readonly onEvent: (event: GrowthEvent) => void,
    options: LiveGrowthOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.growth = { from: options.from, to: options.from + 1, started: [] };
    this.replicas = options.replicas;
    this.audit = options.audit;
  }

  /** Whether `begin` was called. */
  get begun(): boolean {
    return this.asked;
  }

  /** Whether it is over: training resumed at the new count, and the audit (if any) read back. */
  get settled(): boolean {
    const { growth } = this;
    return (
      growth.resumedAt !== undefined && (this.audit === undefined || growth.audit !== undefined)
    );
  }

  /** Starts the pservers the new count needs, then asks for it (in the background). */
  begin(): void {
    if (this.asked) return;
    this.asked = true;
    this.track(this.startAndAsk());
  }

  /** Notes what happened since the last tick; throws what the background work failed with. */
  tick(): void {
    if (this.failure !== undefined) throw this.failure;
    const { growth } = this;
    if (growth.askedOf === undefined) return;
    if (growth.handedBackAt === undefined) this.watchHandBacks();
    if (growth.servedAt === undefined) {
      this.watchServed();
      if (growth.servedAt !== undefined) this.onEvent({ kind: 'growth served', growth });
    }
    if (growth.servedAt !== undefined && growth.resumedAt === undefined) {
      growth.resumedAt = this.progress.resumedAfter(growth.servedAt);
      if (growth.resumedAt !== undefined) {
        this.onEvent({ kind: 'growth resumed', growth });
        if (this.audit)
          this.track(
            this.audit().then((audit) => {
              growth.audit = audit;
              this.onEvent({ kind: 'growth audited', growth });
            }),
          );
      }
    }
  }

  /** Waits for the background work; rejects with what it failed with. */
  async finish(): Promise<void> {
    await this.work;
    if (this.failure !== undefined) throw this.failure;
  }

  private async startAndAsk(): Promise<void> {
    const { growth, host } = this;
    const wanted = growth.to * (1 + this.replicas) + 1;
    for (let n = host.runningPservers(); n < wanted; n++) {
      const { name, pid } = await host.startSpare();
      growth.started.push({ name, pid });
    }
    growth.askedAt = this.now();
    growth.askedOf = await host.askShardCount(growth.to);
    this.onEvent({ kind: 'growth asked', growth });
  }

  /** Every primary of the old count handed back: when the last one did. */
  private watchHandBacks(): void {
    const { growth } = this;
    const times = this.host
      .pserverProcesses()
      .map((p) => logTime(p.lastLog('handed the shard back')))
      .filter((t) => t >= growth.askedAt!);
    if (times.length < growth.from) return;
    growth.handedBackAt = Math.max(...times);
    const refused = this.host
      .pserverProcesses()
      .map((p) => p.lastLog('handed the shard back to the receivers of a live move'))
      .filter((line) => logTime(line) >= growth.askedAt! && typeof line?.['pauseMs'] === 'number')
      .map((line) => logTime(line) - (line!['pauseMs'] as number));
    if (refused.length > 0) growth.refusedAt = Math.min(...refused);
  }

  /** Every index of the new count served by a pserver that said so since the ask. */
  private watchServed(): void {
    const { growth } = this;
    const served = [...this.host.serving().values()].filter(
      (s) => s.shardCount === growth.to && logTime(s.line) >= growth.askedAt!,
    );
    if (served.length < growth.to) return;
    growth.servedAt = Math.max(...served.map((s) => logTime(s.line)));
    const shares = served.map((s) => {
      const since = (message: string) => {
        const line = s.pserver.process.lastLog(message);
        return logTime(line) >= growth.askedAt! ? line : undefined;
      };
      const moved = since('took its share from a live move');
      const line = moved ?? since('restored the shard from the checkpoints of another shard count');
      return { moved: moved !== undefined, ms: Number(line?.ms) };
    });
    growth.moved = shares.filter((share) => share.moved).length;
    const restores = shares.filter((share) => !share.moved).map((share) => share.ms);
    if (restores.length > 0 && restores.every(Number.isFinite))
      growth.restoreMs = Math.max(...restores);
  }

  /** Keeps `task` in the work under way; its failure is thrown by the next `tick`. */
  private track(task: Promise<void>): void {
    const kept = task.catch((err: unknown) => {
      this.failure ??= err;
    });
    this.work = Promise.all([this.work, kept]).then(() => undefined);
  }
}
