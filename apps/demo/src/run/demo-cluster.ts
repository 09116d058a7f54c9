import { describeConsistency, type JobConsistency } from '@pserver/coordination';
import {
  LocalCluster,
  spawnProcess,
  type AppProcess,
  type ManagedProcess,
  type PserverProcess,
} from '@pserver/local-cluster';
import type { TrainerCommand } from './demo-model';
import type { GrowthHost } from './live-growth';
import { servingNow, type Served } from './serving-now';
import { askShardCount } from './shard-count-ask';

/**
 * How long a trainer may hold a task before the master hands it to another. A task is some 60
 * digits, two steps: well under a second, and a failover holds it a few seconds more. The
 * master's default (5 min) suits real datasets; a task orphaned here would cost a whole pass.
 */
export const demoTaskTimeoutMs = 20_000;

/**
 * A pause in training this long is a stall, not a failover (which costs 2 to 4 s here, with a
 * lease TTL of 2 s): e.g. a pass waiting for an orphaned task's timeout, which runs from its
 * hand-out, before the kill, and so pauses training a few seconds less than the timeout.
 */
export const demoStallMs = demoTaskTimeoutMs / 2;

export interface DemoClusterOptions {
  pservers: number;
  /** Replicas of each shard (the master's `--replicas`): one more pserver per shard each. */
  replicas: number;
  /** The job's consistency mode (the master's `--consistency`). */
  consistency: JobConsistency;
  logDir: string;
  /** Every line of every process, with the process's name. */
  onLine: (name: string, line: string) => void;
}

/** What a pserver logs once it is registered and waits as a spare (the pserver's `RoleKeeper`). */
const spareLine = 'waiting for a shard index or a replica to keep (a hot spare until then)';

/**
 * The demo's job on this machine: etcd, two master replicas, the pservers and one spare (a short
 * lease so that a failure is noticed in seconds, a checkpoint every second so that little is
 * rolled back), and the trainer processes. Every process is tied to this one: it exits when this
 * process does, even by SIGKILL. The chaos kills its processes and grows it by a shard.
 */
export class DemoCluster implements GrowthHost {
  readonly trainers: ManagedProcess[] = [];

  private constructor(
    readonly cluster: LocalCluster,
    private readonly options: DemoClusterOptions,
  ) {}

  static async start(options: DemoClusterOptions): Promise<DemoCluster> {
    const cluster = await LocalCluster.start({
      job: 'demo',
      masters: 2,
      pservers: options.pservers,
      spares: 1 + options.pservers * options.replicas,
      replicas: options.replicas,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 4,
      // Blocks of 8,192 elements spread the 50,000 weights of the first layer over every shard.
      blockSize: 8192,
      extraPserverArgs: ['--checkpoint-interval-s', '1'],
      extraMasterArgs: ['--consistency', describeConsistency(options.consistency)],
      logDir: options.logDir,
      onLine: options.onLine,
    });
    return new DemoCluster(cluster, options);
  }

  /** Starts the trainer processes. */
  startTrainers(commands: TrainerCommand[]): void {
    const { options } = this;
    for (const { name, command, args, env } of commands)
      this.trainers.push(
        spawnProcess(command, args, {
          name,
          env,
          stdinPipe: true,
          logDir: options.logDir,
          onLine: (line) => options.onLine(name, line),
        }),
      );
  }

  /**
   * Who serves each index now, from the pservers' logs (`servingNow`: a shard handed back while
   * the job changes its shard count is served by nobody until its new owner says so).
   */
  serving(): Map<number, Served<PserverProcess>> {
    return servingNow(this.cluster.pservers);
  }

  leadingMaster(): AppProcess | undefined {
    return this.cluster.leadingMaster();
  }

  runningPservers(): number {
    return this.cluster.pservers.filter((p) => p.process.running).length;
  }

  pserverProcesses(): ManagedProcess[] {
    return this.cluster.pservers.map((p) => p.process);
  }

  /** Starts one more pserver and waits until it is registered, a spare. */
  async startSpare(): Promise<ManagedProcess> {
    const { process } = await this.cluster.startPserver();
    await process.waitForLog((entry) => entry.msg === spareLine, { timeoutMs: 20_000 });
    return process;
  }

  /** Sets the job's shard count through the masters, the leader first; the master that took it. */
  async askShardCount(count: number): Promise<string> {
    const { cluster } = this;
    const byAddress = new Map(cluster.masters.map((m) => [m.address, m.process.name]));
    const { master } = await askShardCount(() => {
      const leader = cluster.leadingMaster()?.address;
      const running = cluster.masterAddresses;
      return leader ? [leader, ...running.filter((a) => a !== leader)] : running;
    }, count);
    return byAddress.get(master) ?? master;
  }

  /** Every process started, running or not: etcd, masters, pservers, trainers. */
  processes(): ManagedProcess[] {
    const { cluster } = this;
    return [
      cluster.etcd.process,
      ...[...cluster.masters, ...cluster.pservers].map((app) => app.process),
      ...this.trainers,
    ];
  }

  /** Stops the trainers, then the cluster; resolves once every process has exited. */
  async stop(): Promise<void> {
    await Promise.all(this.trainers.map((t) => t.stop({ graceMs: 3_000 })));
    await this.cluster.stop();
  }
}
