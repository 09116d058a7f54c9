import path from 'node:path';
import {
  appBundle,
  freePort,
  parseJsonLine,
  sleep,
  spawnProcess,
  startEtcd,
  startEtcdCluster,
  tempDir,
  waitFor,
  type EtcdCluster,
  type EtcdServer,
  type ManagedProcess,
  type NetworkLab,
} from '@pserver/local-cluster';
import { MasterDriver } from '../master-driver';
import { readRestoredCheckpoint, type RestoredCheckpoint } from './restored-checkpoint';

export interface SupervisedClusterOptions {
  shards: number;
  /** Pservers beyond the shards and their replicas, waiting as hot spares; the supervisor keeps the count. */
  spares: number;
  /** Replicas of each shard (the master's `--replicas`); a pserver is started for each. */
  replicas: number;
  masters: number;
  job: string;
  leaseTtlSeconds: number;
  sessionTtlSeconds: number;
  blockSize: number;
  checkpointIntervalSeconds: number;
  /** Kept high enough that a restored checkpoint is still on disk when the test reads it. */
  checkpointRetain: number;
  /** Pause before starting a process again (a process that exits at once, etcd down, spins no faster). */
  restartDelayMs: number;
  logDir: string | undefined;
  /** A pserver's `--replica-lag-timeout-s`; undefined: its default. */
  replicaLagTimeoutSeconds: number | undefined;
  /**
   * Each process on a host of its own in this lab (etcd on `etcd`, masters on `master-<slot>`,
   * each pserver on its member name), so that the test can cut links between them; undefined:
   * all on loopback.
   */
  network: NetworkLab | undefined;
  /**
   * etcd's members: 1, or (in a network lab) that many on hosts `etcd-0`, `etcd-1`, … every
   * process given all their endpoints.
   */
  etcdMembers: number;
}

export const defaultSupervisedClusterOptions: SupervisedClusterOptions = {
  shards: 2,
  spares: 1,
  replicas: 0,
  masters: 2,
  job: 'ledger',
  leaseTtlSeconds: 2,
  sessionTtlSeconds: 3,
  blockSize: 1024,
  checkpointIntervalSeconds: 1,
  checkpointRetain: 20,
  restartDelayMs: 200,
  logDir: undefined,
  replicaLagTimeoutSeconds: undefined,
  network: undefined,
  etcdMembers: 1,
};

/** A pserver that said it serves a shard: when (its own log time), which epoch, what it restored. */
export interface ServingEvent {
  pserver: string;
  index: number;
  epoch: number;
  address: string;
  atMs: number;
  /** The checkpoint it restored (absent on a fresh shard), read as soon as the line arrived. */
  restored: Promise<RestoredCheckpoint> | undefined;
  /** The orphaned state a fenced owner left that it adopted instead (orphaned-state.ts). */
  adopted: string | undefined;
}

/** A replica that said it is in sync with the primary of `primaryEpoch` (its key says so now). */
export interface InSyncEvent {
  pserver: string;
  index: number;
  primaryEpoch: number;
  atMs: number;
}

/** A replica that began catching up with the primary of `primaryEpoch` (fetching its copy). */
export interface CatchUpEvent {
  pserver: string;
  index: number;
  primaryEpoch: number;
  atMs: number;
}

export interface LeadingEvent {
  master: string;
  address: string;
  atMs: number;
}

export interface ExitEvent {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  atMs: number;
}

/**
 * A job whose supervisor is the test: etcd, master replicas on fixed ports (trainers know them by
 * address, so a restarted replica must come back on its own) and pservers, every one of which is
 * started again when it exits (exit 4 is a fenced pserver or a master that lost its lease; a kill
 * -9 by the test too). A pserver is replaced by a new process under a new member name, which
 * takes a free index or waits as a spare. What the processes say (serving, leading, exits) is kept
 * with its time, for the test to judge.
 */
export class SupervisedCluster {
  readonly serving: ServingEvent[] = [];
  readonly inSync: InSyncEvent[] = [];
  readonly catchingUp: CatchUpEvent[] = [];
  readonly leading: LeadingEvent[] = [];
  /** Shares restored from the checkpoints of another shard count, and their groups of marks ahead. */
  readonly reshaped: { pserver: string; marksAhead: number; atMs: number }[] = [];
  /** Shares a live move's receiver took from memory, and their groups of marks ahead. */
  readonly moved: { pserver: string; marksAhead: number; atMs: number }[] = [];
  /** Pservers that said they wait for a role (hot spares), when. */
  readonly waiting: { pserver: string; atMs: number }[] = [];
  readonly exits: ExitEvent[] = [];
  /** Shards assigned (before their recovery): to whom, under which count, when. */
  readonly assigned: { pserver: string; index: number; shardCount: number; atMs: number }[] = [];
  /** Shards handed back for a change of the count while the job ran: by whom, when. */
  readonly handedBack: { pserver: string; index: number; epoch: number; atMs: number }[] = [];
  readonly checkpointDir: string;
  /** What each pserver serves now: its latest 'serving' line, until it hands that shard back. */
  private readonly servingByPserver = new Map<string, ServingEvent>();
  private readonly masterSlots: { port: number; process: ManagedProcess | undefined }[] = [];
  private readonly pservers = new Set<ManagedProcess>();
  private nextPserver = 0;
  private nextMasterRun = 0;
  private stopping = false;
  /** While the job is down for a change of its shard count: exited pservers are not started again. */
  private holdingPservers = false;

  private constructor(
    readonly etcd: EtcdServer | EtcdCluster,
    readonly options: SupervisedClusterOptions,
  ) {
    this.checkpointDir = tempDir('ledger-checkpoints');
  }

  static async start(options: Partial<SupervisedClusterOptions> = {}): Promise<SupervisedCluster> {
    const settings = { ...defaultSupervisedClusterOptions, ...options };
    const { network } = settings;
    const etcd = await startEtcdOf(settings);
    const cluster = new SupervisedCluster(etcd, settings);
    try {
      for (let i = 0; i < settings.masters; i++) {
        // On a host of its own, a master's port is free whatever it is.
        const port = network ? 7000 : await freePort();
        cluster.masterSlots.push({ port, process: undefined });
        cluster.runMaster(i);
      }
      for (let i = 0; i < settings.shards; i++) cluster.runPserver();
      await cluster.waitUntilServed(0, 60_000).catch((err: Error) => {
        throw new Error(`${err.message}\n${cluster.describeProcesses()}`, { cause: err });
      });
      const more = settings.spares + settings.shards * settings.replicas;
      for (let i = 0; i < more; i++) cluster.runPserver();
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** Each process the cluster started, running or how it exited, with its last lines: for failures. */
  describeProcesses(): string {
    const processes = [
      ...this.masterSlots.flatMap((slot) => (slot.process ? [slot.process] : [])),
      ...this.pservers,
    ];
    const exits = this.exits.map((e) => `${e.name} exited (${e.signal ?? e.code})`);
    return [
      `exits: ${exits.join(', ') || 'none'}`,
      ...processes.map((p) => p.failure(p.running ? 'running' : 'exited').message),
    ].join('\n');
  }

  /** Every master replica's address (fixed for the cluster's life). */
  get masterAddresses(): string[] {
    return this.masterSlots.map((slot, i) => `${this.hostAddress(`master-${i}`)}:${slot.port}`);
  }

  /** The address of the process named `name`: its lab host's, or loopback. */
  private hostAddress(name: string): string {
    return this.options.network?.host(name).address ?? '127.0.0.1';
  }

  /**
   * The running pserver serving each index now: of each pserver, its latest 'serving' line unless
   * it handed that shard back since; of each index, the highest epoch.
   */
  servingNow(): Map<number, { process: ManagedProcess; event: ServingEvent }> {
    const byIndex = new Map<number, { process: ManagedProcess; event: ServingEvent }>();
    for (const event of this.servingByPserver.values()) {
      const process = [...this.pservers].find((p) => p.name === event.pserver && p.running);
      if (!process) continue;
      const known = byIndex.get(event.index);
      if (!known || known.event.epoch <= event.epoch) byIndex.set(event.index, { process, event });
    }
    return byIndex;
  }

  /**
   * A running in-sync replica of `index` for its primary now, that has not been promoted (its
   * latest line of the index is the in-sync one).
   */
  replicaOf(index: number): ManagedProcess | undefined {
    const primary = this.servingNow().get(index);
    if (!primary) return undefined;
    const event = [...this.inSync]
      .reverse()
      .find(
        (e) =>
          e.index === index &&
          e.primaryEpoch === primary.event.epoch &&
          !this.serving.some((s) => s.pserver === e.pserver && s.atMs >= e.atMs),
      );
    return event && [...this.pservers].find((p) => p.name === event.pserver && p.running);
  }

  /** Waits for a replica of `index` in sync with its current primary, said at or after `sinceMs`. */
  waitForInSyncReplica(index: number, sinceMs: number, timeoutMs: number): Promise<InSyncEvent> {
    return waitFor(
      () => {
        const primary = this.servingNow().get(index);
        return this.inSync.find(
          (e) => e.index === index && e.atMs >= sinceMs && e.primaryEpoch === primary?.event.epoch,
        );
      },
      { timeoutMs, description: `a replica of index ${index} in sync since ${sinceMs}` },
    );
  }

  /**
   * Waits for a running pserver that began catching up with `index`'s current primary at or after
   * `sinceMs`, and has not said it is in sync since.
   */
  waitForCatchUp(
    index: number,
    sinceMs: number,
    timeoutMs: number,
  ): Promise<{ event: CatchUpEvent; process: ManagedProcess }> {
    return waitFor(
      () => {
        const epoch = this.servingNow().get(index)?.event.epoch;
        for (const event of this.catchingUp) {
          if (event.index !== index || event.atMs < sinceMs || event.primaryEpoch !== epoch)
            continue;
          if (this.inSync.some((e) => e.pserver === event.pserver && e.atMs >= event.atMs))
            continue;
          const process = [...this.pservers].find((p) => p.name === event.pserver && p.running);
          if (process) return { event, process };
        }
        return undefined;
      },
      { timeoutMs, intervalMs: 1, description: `a replica of index ${index} catching up` },
    );
  }

  /** Waits until every index is served by a pserver that said so at or after `sinceMs`. */
  waitUntilServed(sinceMs: number, timeoutMs: number): Promise<ServingEvent[]> {
    return waitFor(
      () => {
        const now = [...this.servingNow().values()].map((s) => s.event);
        return now.length === this.options.shards && now.every((e) => e.atMs >= sinceMs)
          ? now
          : undefined;
      },
      { timeoutMs, description: `every shard served (since ${sinceMs})` },
    );
  }

  /** Waits for a new serving event of `index` with an epoch above `epoch`. */
  waitForReplacement(index: number, epoch: number, timeoutMs: number): Promise<ServingEvent> {
    return waitFor(() => this.serving.find((e) => e.index === index && e.epoch > epoch), {
      timeoutMs,
      description: `index ${index} served above epoch ${epoch}`,
    });
  }

  /** The first 'leading' line at or after `sinceMs`. */
  waitForLeader(sinceMs: number, timeoutMs: number): Promise<LeadingEvent> {
    return waitFor(() => this.leading.find((e) => e.atMs >= sinceMs), {
      timeoutMs,
      description: `a master leading since ${sinceMs}`,
    });
  }

  /** The running pserver named `name`, if any. */
  pserver(name: string): ManagedProcess | undefined {
    return [...this.pservers].find((p) => p.name === name && p.running);
  }

  /** The running master that said 'leading' last. */
  leader(): ManagedProcess | undefined {
    for (const event of [...this.leading].reverse()) {
      const slot = this.masterSlots.find((s) => s.process?.name === event.master);
      if (slot?.process?.running) return slot.process;
    }
    return undefined;
  }

  /**
   * Kills etcd (SIGKILL), waits `downMs` and starts it again on the same data dir and ports.
   * Resolves with the time it was healthy again.
   */
  async etcdOutage(downMs: number): Promise<{ killedMs: number; backMs: number }> {
    const etcd = this.etcd;
    if (!('restart' in etcd)) throw new Error('an etcd outage is of a one-member etcd');
    const killedMs = Date.now();
    await etcd.process.kill();
    await sleep(downMs);
    await etcd.restart();
    return { killedMs, backMs: Date.now() };
  }

  /**
   * Changes the job's shard count while it is down, as an operator does: stops every pserver
   * (SIGTERM: each commits a final checkpoint and frees its index; none is started again
   * meanwhile; `staggerMs` apart), sets the count through a master (`SetDesiredShards`, retried until the leader
   * answers), then starts the pservers of `count` shards (with the spares and replicas the options
   * ask for) and supervises them again. Resolves with when the last pserver stopped and when the
   * count changed; `options.shards` is `count` from then on.
   */
  async reshapeOffline(
    count: number,
    { staggerMs = 0 }: { staggerMs?: number } = {},
  ): Promise<{ stoppedMs: number; changedMs: number }> {
    this.holdingPservers = true;
    try {
      // One after another, as an operator stops pods: between two stops, the trainers' steps are
      // applied on the shards still up and wait for the others.
      const stopping: Promise<unknown>[] = [];
      for (const [k, pserver] of [...this.pservers].entries()) {
        if (k > 0 && staggerMs > 0) await sleep(staggerMs);
        stopping.push(pserver.stop({ graceMs: 10_000 }));
      }
      await Promise.all(stopping);
      const stoppedMs = Date.now();
      await this.setDesiredShards(count);
      const changedMs = Date.now();
      this.options.shards = count;
      const { spares, replicas } = this.options;
      for (let i = 0; i < count * (1 + replicas) + spares; i++) this.runPserver();
      return { stoppedMs, changedMs };
    } finally {
      this.holdingPservers = false;
    }
  }

  /**
   * Changes the shard count of the running job, as an operator does: starts the pservers `count`
   * shards need (with the spares and replicas the options ask for; on a shrink the pservers freed
   * stay as spares), then sets the count through a master (`SetDesiredShards`, retried until the
   * leader answers). The primaries hand their shards back and the pservers restore their shares
   * of `count`; `options.shards` is `count` from then on. Resolves with when the count was asked.
   */
  async reshapeLive(count: number): Promise<{ askedMs: number }> {
    const { spares, replicas } = this.options;
    const started: string[] = [];
    for (let n = this.pservers.size; n < count * (1 + replicas) + spares; n++)
      started.push(this.runPserver().name);
    // Registered spares receive the new indices' slices while the job runs.
    await waitFor(() => started.every((name) => this.waiting.some((w) => w.pserver === name)), {
      timeoutMs: 30_000,
      description: `the pservers started for ${count} shards waiting for a role`,
    });
    const askedMs = Date.now();
    await this.setDesiredShards(count);
    this.options.shards = count;
    return { askedMs };
  }

  /** Stops supervising, then every process (SIGTERM, then SIGKILL), then etcd. */
  async stop(): Promise<void> {
    this.stopping = true;
    const processes = [...this.pservers, ...this.masterSlots.flatMap((s) => s.process ?? [])];
    await Promise.all(processes.map((p) => p.stop({ graceMs: 5_000 })));
    await this.etcd.stop();
  }

  /** `SetDesiredShards(count)`, asked of each master until one (the leader) takes it. */
  private async setDesiredShards(count: number): Promise<void> {
    await waitFor(
      async () => {
        for (const address of this.masterAddresses) {
          const master = new MasterDriver(address, 5_000);
          try {
            await master.setDesiredShards(count);
            return true;
          } catch {
            // A follower, a master that has not seen the indices freed yet: ask again.
          } finally {
            master.close();
          }
        }
        return undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, description: `the shard count set to ${count}` },
    );
  }

  private runMaster(slot: number): void {
    const { options } = this;
    const entry = this.masterSlots[slot]!;
    const child = this.spawn('master', `master-${slot}.${this.nextMasterRun++}`, `master-${slot}`, [
      '--port',
      String(entry.port),
      '--etcd-endpoints',
      this.etcd.endpoint,
      '--job',
      options.job,
      '--desired-pservers',
      String(options.shards),
      '--lease-ttl-s',
      String(options.leaseTtlSeconds),
      '--session-ttl-s',
      String(options.sessionTtlSeconds),
      '--block-size',
      String(options.blockSize),
      '--replicas',
      String(options.replicas),
    ]);
    entry.process = child;
    void child.exited.then(() => this.restartLater(() => this.runMaster(slot)));
  }

  private runPserver(): ManagedProcess {
    const { options } = this;
    const name = `pserver-${this.nextPserver++}`;
    const child = this.spawn('pserver', name, name, [
      '--port',
      '0',
      '--etcd-endpoints',
      this.etcd.endpoint,
      '--job',
      options.job,
      '--member',
      name,
      '--lease-ttl-s',
      String(options.leaseTtlSeconds),
      '--checkpoint-dir',
      this.checkpointDir,
      '--checkpoint-interval-s',
      String(options.checkpointIntervalSeconds),
      '--checkpoint-retain',
      String(options.checkpointRetain),
      ...(options.replicaLagTimeoutSeconds === undefined
        ? []
        : ['--replica-lag-timeout-s', String(options.replicaLagTimeoutSeconds)]),
    ]);
    this.pservers.add(child);
    void child.exited.then(() => {
      this.pservers.delete(child);
      if (!this.holdingPservers) this.restartLater(() => void this.runPserver());
    });
    return child;
  }

  private restartLater(run: () => void): void {
    if (this.stopping) return;
    setTimeout(() => {
      if (!this.stopping) run();
    }, this.options.restartDelayMs).unref();
  }

  /** Starts `app` as process `name` on host `host` (in the lab, if there is one). */
  private spawn(
    app: 'master' | 'pserver',
    name: string,
    host: string,
    args: string[],
  ): ManagedProcess {
    const { logDir, network } = this.options;
    const appArgs = [appBundle(app), '--log-format', 'json', '--exit-on-stdin-close', ...args];
    const lab = network?.host(host);
    const [command, commandArgs] = lab
      ? network!.command(lab, process.execPath, [...appArgs, '--host', lab.address])
      : [process.execPath, appArgs];
    const child = spawnProcess(command, commandArgs, {
      name,
      stdinPipe: true,
      ...(logDir ? { logDir: path.resolve(logDir) } : {}),
      onLine: (line) => this.observe(name, line),
    });
    void child.exited.then((status) =>
      this.exits.push({ name, code: status.code, signal: status.signal, atMs: Date.now() }),
    );
    return child;
  }

  private observe(name: string, line: string): void {
    const entry = parseJsonLine(line);
    if (!entry) return;
    const atMs = typeof entry.time === 'string' ? Date.parse(entry.time) : Date.now();
    if (entry.msg === 'serving') {
      const recovered = typeof entry.recovered === 'string' ? entry.recovered : undefined;
      const restored = recovered
        ? readRestoredCheckpoint(path.join(this.checkpointDir, recovered))
        : undefined;
      // Read now, judged later: keep an unread file from being an unhandled rejection meanwhile.
      restored?.catch(() => undefined);
      const event: ServingEvent = {
        pserver: name,
        index: Number(entry.index),
        epoch: Number(entry.shardEpoch),
        address: String(entry.address),
        atMs,
        restored,
        adopted: typeof entry.adopted === 'string' ? entry.adopted : undefined,
      };
      this.serving.push(event);
      this.servingByPserver.set(name, event);
    } else if (entry.msg === 'assigned a shard') {
      this.assigned.push({
        pserver: name,
        index: Number(entry.index),
        shardCount: Number(entry.shardCount),
        atMs,
      });
    } else if (entry.msg === 'handed the shard back') {
      const index = Number(entry.index);
      this.handedBack.push({ pserver: name, index, epoch: Number(entry.shardEpoch), atMs });
      if (this.servingByPserver.get(name)?.index === index) this.servingByPserver.delete(name);
    } else if (entry.msg === 'in sync with the primary: promotable') {
      this.inSync.push({
        pserver: name,
        index: Number(entry.index),
        primaryEpoch: Number(entry.primaryEpoch),
        atMs,
      });
    } else if (entry.msg === 'replicating a shard') {
      this.catchingUp.push({
        pserver: name,
        index: Number(entry.index),
        primaryEpoch: Number(entry.primaryEpoch),
        atMs,
      });
    } else if (entry.msg === 'restored the shard from the checkpoints of another shard count') {
      this.reshaped.push({ pserver: name, marksAhead: Number(entry.marksAhead), atMs });
    } else if (entry.msg === 'took its share from a live move') {
      this.moved.push({ pserver: name, marksAhead: Number(entry.marksAhead), atMs });
    } else if (
      entry.msg === 'waiting for a shard index or a replica to keep (a hot spare until then)'
    ) {
      this.waiting.push({ pserver: name, atMs });
    } else if (entry.msg === 'leading') {
      this.leading.push({ master: name, address: String(entry.address), atMs });
    }
  }
}

/** etcd as the options ask: one member (on the lab's host `etcd`, if any), or one on each `etcd-<i>`. */
function startEtcdOf(settings: SupervisedClusterOptions): Promise<EtcdServer | EtcdCluster> {
  const { network, etcdMembers } = settings;
  const logDir = settings.logDir ? { logDir: path.resolve(settings.logDir) } : {};
  if (etcdMembers === 1)
    return startEtcd({
      ...logDir,
      ...(network ? { onHost: { lab: network, host: network.host('etcd') } } : {}),
    });
  if (!network)
    throw new Error('an etcd of several members runs in a network lab (options.network)');
  const hosts = Array.from({ length: etcdMembers }, (_, i) => network.host(`etcd-${i}`));
  return startEtcdCluster(network, hosts, logDir);
}
