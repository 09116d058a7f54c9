import path from 'node:path';
import {
  startMasterProcess,
  startPserverProcess,
  type AppProcess,
  type PserverProcess,
} from './app-processes';
import { startEtcd, type EtcdServer } from './etcd-server';
import { tempDir } from './temp-dir';
import { waitFor } from './wait-for';

export interface LocalClusterOptions {
  /** Shards of the job: pservers that get an index. */
  pservers: number;
  /** Extra pservers waiting as hot spares (or to become replicas). */
  spares: number;
  /** Replicas of each shard (the master's `--replicas`). */
  replicas: number;
  /** Master replicas. */
  masters: number;
  job: string;
  /** pserver and master lease TTL (short in tests: 2 s). */
  leaseTtlSeconds: number;
  sessionTtlSeconds: number;
  blockSize: number | undefined;
  /** Shared by the pservers; default a new temporary directory. */
  checkpointDir: string | undefined;
  /** Where each process's output is copied; default `tmp/test-logs/`. */
  logDir: string | undefined;
  /** Called with every line of every process, with its name (to print with a prefix). */
  onLine: ((name: string, line: string) => void) | undefined;
  extraPserverArgs: string[];
  extraMasterArgs: string[];
  /** Generous bound on waiting for the cluster to come up. */
  startTimeoutMs: number;
}

export const defaultLocalClusterOptions: LocalClusterOptions = {
  pservers: 2,
  spares: 0,
  replicas: 0,
  masters: 1,
  job: 'local',
  leaseTtlSeconds: 5,
  sessionTtlSeconds: 10,
  blockSize: undefined,
  checkpointDir: undefined,
  logDir: undefined,
  onLine: undefined,
  extraPserverArgs: [],
  extraMasterArgs: [],
  startTimeoutMs: 60_000,
};

/**
 * A whole job on this machine: etcd on free loopback ports with a throw-away data dir, master
 * replicas and pservers (and spares) as real processes, each on a free port. Every process is
 * tied to this one (it exits when this process dies, even by SIGKILL) and `stop()` stops them all.
 * Used by the integration tests, the demo and `nx run demo:cluster`.
 */
export class LocalCluster {
  readonly masters: AppProcess[] = [];
  readonly pservers: PserverProcess[] = [];
  readonly checkpointDir: string;
  private nextPserver = 0;
  private nextMaster = 0;

  private constructor(
    readonly etcd: EtcdServer,
    readonly options: LocalClusterOptions,
  ) {
    this.checkpointDir = options.checkpointDir ?? tempDir('cluster-checkpoints');
  }

  /** Starts etcd, the masters and the pservers, and waits until every index is served. */
  static async start(options: Partial<LocalClusterOptions> = {}): Promise<LocalCluster> {
    const settings = { ...defaultLocalClusterOptions, ...options };
    const etcd = await startEtcd(settings.logDir ? { logDir: path.resolve(settings.logDir) } : {});
    const cluster = new LocalCluster(etcd, settings);
    try {
      for (let i = 0; i < settings.masters; i++) await cluster.startMaster();
      for (let i = 0; i < settings.pservers; i++) await cluster.startPserver();
      await cluster.waitUntilServed();
      for (let i = 0; i < settings.spares; i++) await cluster.startPserver();
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  get masterAddresses(): string[] {
    return this.masters.filter((m) => m.process.running).map((m) => m.address);
  }

  /**
   * Starts one more master replica, on a free port or on `port` (a master that died, started
   * again where its trainers look for it).
   */
  async startMaster(port?: number): Promise<AppProcess> {
    const name = `master-${this.nextMaster++}`;
    const { options } = this;
    const master = await startMasterProcess(
      [
        '--etcd-endpoints',
        this.etcd.endpoint,
        '--job',
        options.job,
        '--desired-pservers',
        String(options.pservers),
        '--lease-ttl-s',
        String(options.leaseTtlSeconds),
        '--session-ttl-s',
        String(options.sessionTtlSeconds),
        ...(options.blockSize ? ['--block-size', String(options.blockSize)] : []),
        ...(options.replicas ? ['--replicas', String(options.replicas)] : []),
        ...(port !== undefined ? ['--port', String(port)] : []),
        ...options.extraMasterArgs,
      ],
      this.processOptions(name),
    );
    this.masters.push(master);
    return master;
  }

  /** Starts a master that has exited again, on its port: its trainers find it where it was. */
  async restartMaster(master: AppProcess): Promise<AppProcess> {
    if (master.process.running) throw new Error(`master ${master.address} is still running`);
    return this.startMaster(Number(master.address.slice(master.address.lastIndexOf(':') + 1)));
  }

  /** Starts one more pserver (it gets a free index, or waits as a spare). */
  async startPserver(
    extraArgs: string[] = [],
    env?: Record<string, string>,
  ): Promise<PserverProcess> {
    const name = `pserver-${this.nextPserver++}`;
    const { options } = this;
    const pserver = await startPserverProcess(
      [
        '--etcd-endpoints',
        this.etcd.endpoint,
        '--job',
        options.job,
        '--member',
        name,
        '--lease-ttl-s',
        String(options.leaseTtlSeconds),
        ...options.extraPserverArgs,
        ...extraArgs,
      ],
      { ...this.processOptions(name), checkpointDir: this.checkpointDir, env },
    );
    this.pservers.push(pserver);
    return pserver;
  }

  /**
   * The shard each running pserver says it serves (its latest 'serving' log line, unless it
   * handed that shard back since): index → the process, its address and its shard epoch.
   */
  serving(): Map<number, { pserver: PserverProcess; epoch: number }> {
    const byIndex = new Map<number, { pserver: PserverProcess; epoch: number }>();
    for (const pserver of this.pservers) {
      if (!pserver.process.running) continue;
      const line = pserver.process.lastLog('serving');
      if (!line) continue;
      // A shard handed back since (the job changed its count) is no longer this pserver's.
      const handedBack = pserver.process.lastLog('handed the shard back');
      if (handedBack && String(handedBack.time) >= String(line.time)) continue;
      const index = Number(line.index);
      const epoch = Number(line.shardEpoch);
      const known = byIndex.get(index);
      if (!known || known.epoch < epoch) byIndex.set(index, { pserver, epoch });
    }
    return byIndex;
  }

  /** Waits until every index is served by a running pserver; returns index → pserver and epoch. */
  async waitUntilServed(
    timeoutMs = this.options.startTimeoutMs,
  ): Promise<Map<number, { pserver: PserverProcess; epoch: number }>> {
    return waitFor(
      () => {
        const serving = this.serving();
        return serving.size >= this.options.pservers ? serving : undefined;
      },
      { timeoutMs, intervalMs: 25, description: 'every shard index served' },
    );
  }

  /**
   * The running master that logged 'leading' last: the leader, unless it lost its lease a moment
   * ago without dying (then the next 'leading' line names its successor).
   */
  leadingMaster(): AppProcess | undefined {
    let latest: { master: AppProcess; time: string } | undefined;
    for (const master of this.masters) {
      if (!master.process.running) continue;
      const line = master.process.lastLog('leading');
      const time = String(line?.time ?? '');
      if (line && (!latest || time > latest.time)) latest = { master, time };
    }
    return latest?.master;
  }

  /** The pserver process serving `index` now. */
  pserverServing(index: number): PserverProcess {
    const entry = this.serving().get(index);
    if (!entry) throw new Error(`no running pserver serves index ${index}`);
    return entry.pserver;
  }

  /** Stops every process (SIGTERM, then SIGKILL after a grace period) and etcd. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.pservers, ...this.masters].map((p) => p.process.stop({ graceMs: 10_000 })),
    );
    await this.etcd.stop();
  }

  private processOptions(name: string): {
    name: string;
    logDir?: string;
    onLine?: (line: string) => void;
  } {
    const { logDir, onLine } = this.options;
    return {
      name,
      ...(logDir ? { logDir: path.resolve(logDir) } : {}),
      ...(onLine ? { onLine: (line: string) => onLine(name, line) } : {}),
    };
  }
}
