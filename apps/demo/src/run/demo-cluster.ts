import { describeConsistency, type JobConsistency } from '@pserver/coordination';
import { LocalCluster, spawnProcess, type ManagedProcess } from '@pserver/local-cluster';
import type { TrainerCommand } from './demo-model';

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

/**
 * The demo's job on this machine: etcd, two master replicas, the pservers and one spare (a short
 * lease so that a failure is noticed in seconds, a checkpoint every second so that little is
 * rolled back), and the trainer processes. Every process is tied to this one: it exits when this
 * process does, even by SIGKILL.
 */
export class DemoCluster {
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
