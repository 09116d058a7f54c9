import {
  FaultProxy,
  sleep,
  waitFor,
  type ManagedProcess,
  type NetworkLab,
} from '@pserver/local-cluster';
import { PserverDriver } from '../pserver-driver';
import type { LedgerTrainer } from './ledger-trainer';
import type { SupervisedCluster } from './supervised-cluster';

/** What one fault did: when it began, and the moment the cluster served again (the reference). */
export interface FaultOutcome {
  name: string;
  startMs: number;
  /** When the cluster served again (a replacement serving, a new leader, etcd healthy, …). */
  referenceMs: number;
  /** What `referenceMs` is. */
  reference: string;
  /** An earlier moment the figures are also given from (etcd healthy, before the cluster serves). */
  earlier?: { what: string; atMs: number };
  /** Other figures of the fault, in ms from its start or as said. */
  notes: Record<string, number | string | null>;
}

export type Fault = (
  cluster: SupervisedCluster,
  trainers: LedgerTrainer[],
) => Promise<FaultOutcome>;

const bound = 30_000;

function serving(cluster: SupervisedCluster, index: number) {
  const entry = cluster.servingNow().get(index);
  if (!entry) throw new Error(`no pserver serves index ${index}`);
  return entry;
}

/** The running in-sync replica of shard `index`, once there is one. */
function inSyncReplica(cluster: SupervisedCluster, index: number) {
  return waitFor(() => cluster.replicaOf(index), {
    timeoutMs: bound,
    description: `an in-sync replica of shard ${index}`,
  });
}

/**
 * kill -9 of shard `index`'s in-sync replica; resolves the moment a spare begins catching up in
 * its place (fetching the primary's copy).
 */
async function killReplicaUntilCatchUp(cluster: SupervisedCluster, index: number) {
  const replica = await inSyncReplica(cluster, index);
  const startMs = Date.now();
  await replica.kill();
  const catching = await cluster.waitForCatchUp(index, startMs, bound);
  return { startMs, catching };
}

/**
 * kill -9 of the pserver serving `index`: a spare restores the shard's checkpoint and serves.
 * With `afterDelta`, the kill waits until the shard's newest committed checkpoint is a delta, so
 * the spare restores a chain (a full checkpoint and the deltas after it).
 */
export function killPserver(index: number, options: { afterDelta?: boolean } = {}): Fault {
  return async (cluster) => {
    const { process, event } = serving(cluster, index);
    const notes: Record<string, number> = {};
    if (options.afterDelta) notes['chainLength'] = await newestIsDelta(event.address);
    const startMs = Date.now();
    await process.kill();
    const replacement = await cluster.waitForReplacement(index, event.epoch, bound);
    return {
      name: `kill -9 of the pserver of shard ${index}`,
      startMs,
      referenceMs: replacement.atMs,
      reference: 'the replacement serving (a spare, or a promoted replica)',
      notes: { ...notes, spareServingMs: replacement.atMs - startMs },
    };
  };
}

/** Waits until the pserver at `address` committed a delta last; returns its chain's length. */
async function newestIsDelta(address: string): Promise<number> {
  const driver = new PserverDriver(address);
  try {
    const deadline = Date.now() + bound;
    while (Date.now() < deadline) {
      const chain = (await driver.status()).lastCheckpoint?.chain.length ?? 0;
      if (chain > 0) return chain;
      await sleep(50);
    }
    throw new Error(`the pserver at ${address} committed no delta within ${bound} ms`);
  } finally {
    driver.close();
  }
}

/**
 * kill -9 of an in-sync replica of shard `index` (the job keeps replicas): the primary waits for
 * it until its key goes with its lease, then goes on; a spare becomes the shard's replica and
 * catches up (the reference: it is in sync).
 */
export function killReplica(index: number): Fault {
  return async (cluster) => {
    const replica = await inSyncReplica(cluster, index);
    const startMs = Date.now();
    await replica.kill();
    const next = await cluster.waitForInSyncReplica(index, startMs, bound);
    return {
      name: `kill -9 of a replica of shard ${index}`,
      startMs,
      referenceMs: next.atMs,
      reference: 'a new replica in sync',
      notes: { inSyncMs: next.atMs - startMs },
    };
  };
}

/**
 * A replica killed while it catches up: the in-sync replica of shard `index` is killed, and the
 * spare that becomes the new replica is killed too the moment it begins fetching its copy. The
 * primary waits for neither once their keys are gone; a third pserver catches up (the
 * reference: it is in sync).
 */
export function killReplicaCatchingUp(index: number): Fault {
  return async (cluster) => {
    const { startMs, catching } = await killReplicaUntilCatchUp(cluster, index);
    const killedMs = Date.now();
    await catching.process.kill();
    const next = await cluster.waitForInSyncReplica(index, killedMs, bound);
    return {
      name: `kill -9 of a replica of shard ${index}, then of its successor while it catches up`,
      startMs,
      referenceMs: next.atMs,
      reference: 'a third replica in sync',
      notes: {
        catchingUpKilledMs: killedMs - startMs,
        killedAfterItBeganMs: killedMs - catching.event.atMs,
        inSyncMs: next.atMs - startMs,
      },
    };
  };
}

/**
 * The primary of shard `index` killed while its only replica catches up: the in-sync replica is
 * killed, and the primary the moment a new replica begins fetching its copy. That replica holds
 * nothing it may serve, so a spare restores the shard's checkpoint (the loss of replicas 0).
 */
export function killPrimaryWhileCatchingUp(index: number): Fault {
  return async (cluster) => {
    const { process, event } = serving(cluster, index);
    const { startMs, catching } = await killReplicaUntilCatchUp(cluster, index);
    const killedMs = Date.now();
    await process.kill();
    const replacement = await cluster.waitForReplacement(index, event.epoch, bound);
    return {
      name: `kill -9 of the primary of shard ${index} while its new replica catches up`,
      startMs,
      referenceMs: replacement.atMs,
      reference: 'a spare serving the restored checkpoint',
      notes: {
        primaryKilledAfterCatchUpBeganMs: killedMs - catching.event.atMs,
        spareServingMs: replacement.atMs - killedMs,
      },
    };
  };
}

/**
 * kill -9 of every copy of shard `index` at once, its primary and its in-sync replica: nothing
 * can be promoted, so a spare restores the shard's last checkpoint (the loss of a job without
 * replicas, bounded by the checkpoint interval).
 */
export function killEveryCopy(index: number): Fault {
  return async (cluster) => {
    const replica = await inSyncReplica(cluster, index);
    const { process, event } = serving(cluster, index);
    const startMs = Date.now();
    await Promise.all([process.kill(), replica.kill()]);
    const replacement = await cluster.waitForReplacement(index, event.epoch, bound);
    return {
      name: `kill -9 of the primary and the replica of shard ${index} at once`,
      startMs,
      referenceMs: replacement.atMs,
      reference: 'a spare serving the restored checkpoint',
      notes: { spareServingMs: replacement.atMs - startMs },
    };
  };
}

/** kill -9 of the leading master (the supervisor starts it again on its port). */
export function killLeadingMaster(): Fault {
  return async (cluster) => {
    const leader = cluster.leader();
    if (!leader) throw new Error('no master leads');
    const startMs = Date.now();
    await leader.kill();
    const next = await cluster.waitForLeader(startMs, bound);
    return {
      name: 'kill -9 of the leading master',
      startMs,
      referenceMs: next.atMs,
      reference: 'the new leader leading',
      notes: { newLeaderMs: next.atMs - startMs, newLeader: next.master },
    };
  };
}

/** SIGSTOP of the pserver serving `index` for `pauseMs` (past its lease), then SIGCONT. */
export function pausePserver(index: number, pauseMs: number): Fault {
  return async (cluster) => {
    const { process, event } = serving(cluster, index);
    const startMs = Date.now();
    process.signal('SIGSTOP');
    await sleep(pauseMs);
    process.signal('SIGCONT');
    const replacement = await cluster.waitForReplacement(index, event.epoch, bound);
    // A pserver that slept through its lease must fence itself (exit 4) once it runs again.
    const exit = await Promise.race([process.exited, sleep(10_000).then(() => undefined)]);
    return {
      name: `SIGSTOP of the pserver of shard ${index} for ${pauseMs} ms, then SIGCONT`,
      startMs,
      referenceMs: replacement.atMs,
      reference: 'the replacement serving (a spare, or a promoted replica)',
      notes: {
        spareServingMs: replacement.atMs - startMs,
        pausedPserverExit: exit ? (exit.code ?? exit.signal) : 'still running 10 s after SIGCONT',
      },
    };
  };
}

/**
 * kill -9 of the pserver serving `index`; `stuckMs` later, when every trainer's step is stuck
 * retrying its push to the dead shard after the other shards applied theirs, SIGSTOP of every
 * trainer; SIGCONT once the spare serves and `pauseMs` (past the session TTL) have passed. Every
 * session has ended by then: the trainers register again with their steps in flight, and those
 * steps run again against shards that already applied them.
 */
export function pauseTrainersThroughFailover(index: number, pauseMs: number, stuckMs = 300): Fault {
  return async (cluster, trainers) => {
    const { process, event } = serving(cluster, index);
    const startMs = Date.now();
    await process.kill();
    await sleep(stuckMs);
    const pausedMs = Date.now();
    for (const trainer of trainers) trainer.pause();
    const replacement = await cluster.waitForReplacement(index, event.epoch, bound);
    await sleep(Math.max(0, pausedMs + pauseMs - Date.now()));
    const resumedMs = Date.now();
    for (const trainer of trainers) trainer.resume();
    return {
      name: `kill -9 of the pserver of shard ${index}, then SIGSTOP of every trainer for ${pauseMs} ms`,
      startMs,
      referenceMs: resumedMs,
      reference: 'the trainers continued (SIGCONT)',
      notes: { spareServingMs: replacement.atMs - startMs, pausedMs: resumedMs - pausedMs },
    };
  };
}

/** etcd killed, and started again on the same data and ports `downMs` later. */
export function etcdOutage(downMs: number): Fault {
  return async (cluster) => {
    const { killedMs, backMs } = await cluster.etcdOutage(downMs);
    // Served again: a leader and every shard, each said after etcd went away.
    const servedAgain = await Promise.all([
      cluster.waitForLeader(killedMs, 60_000),
      cluster.waitUntilServed(killedMs, 60_000),
    ]).then(
      ([leader, shards]) => Math.max(leader.atMs, ...shards.map((s) => s.atMs)),
      () => undefined,
    );
    return {
      name: `etcd killed for ${downMs} ms, then restarted on the same data and ports`,
      startMs: killedMs,
      referenceMs: servedAgain ?? backMs,
      reference: servedAgain ? 'a leader and every shard serving again' : 'etcd healthy again',
      earlier: { what: 'etcd healthy again', atMs: backMs },
      notes: {
        etcdBackMs: backMs - killedMs,
        clusterServingAfterEtcdMs: servedAgain === undefined ? null : servedAgain - backMs,
      },
    };
  };
}

/**
 * The job stopped and restored onto `count` shards while its trainers train: every pserver stopped
 * (SIGTERM, a final checkpoint each), the count changed, and `count` new pservers each restore
 * their share of the old checkpoints. A step in flight when it stopped — applied on some shards,
 * not on others — is run again under the new view, and must be applied exactly once. With
 * `staggerMs`, the pservers stop that far apart: steps in flight between the stops are certain.
 */
export function reshapeOffline(count: number, options: { staggerMs?: number } = {}): Fault {
  return async (cluster) => {
    const from = cluster.options.shards;
    const startMs = Date.now();
    const { stoppedMs, changedMs } = await cluster.reshapeOffline(count, options);
    const served = await cluster.waitUntilServed(changedMs, bound);
    const servedMs = Math.max(...served.map((event) => event.atMs));
    return {
      name: `the job stopped and restored from ${from} onto ${count} shards`,
      startMs,
      referenceMs: servedMs,
      reference: `every one of the ${count} shards serving its restored share`,
      notes: { stoppedMs: stoppedMs - startMs, countChangedMs: changedMs - startMs },
    };
  };
}

/** Who a live reshape's fault kills (kill -9) in the middle of it. */
export type ReshapeVictim = 'old owner' | 'new owner' | 'leading master';

/**
 * The running job's shard count changed to `count` while its trainers train (`SetDesiredShards`):
 * every primary commits a final checkpoint and hands its index back, and the pservers — spares
 * again, with more started for a growth — restore their shares of `count`. A step applied on a
 * shard before its hand-back and re-run under the new view must be applied exactly once. With
 * `kill`, one process is killed in the middle: the `old owner` (a primary of the old count, the
 * moment the change is asked: it has not handed back yet; a job with replicas promotes its
 * replica, which hands back in turn), a `new owner` (the first pserver assigned an index of
 * `count`, while it restores its share: a spare restores it again), or the `leading master` (the
 * moment the change is asked: the next leader carries it on from etcd).
 */
export function reshapeLive(count: number, { kill }: { kill?: ReshapeVictim } = {}): Fault {
  return async (cluster) => {
    const from = cluster.options.shards;
    const handedBefore = cluster.handedBack.length;
    // The victims, chosen before the change is asked.
    const oldOwner = kill === 'old owner' ? serving(cluster, 0).process : undefined;
    if (oldOwner && cluster.options.replicas > 0) await inSyncReplica(cluster, 0);
    const master = kill === 'leading master' ? cluster.leader() : undefined;
    if (kill === 'leading master' && !master) throw new Error('no master leads');
    const { askedMs } = await cluster.reshapeLive(count);
    const notes: Record<string, number | string | null> = {};
    if (oldOwner) {
      notes['oldOwnerHandedBackBeforeKill'] = cluster.handedBack
        .slice(handedBefore)
        .some((h) => h.pserver === oldOwner.name)
        ? 'yes'
        : 'no';
      await oldOwner.kill();
    }
    if (master) await master.kill();
    if (kill === 'new owner') {
      const assigned = await waitFor(
        () => cluster.assigned.find((a) => a.shardCount === count && a.atMs >= askedMs),
        { timeoutMs: bound, intervalMs: 1, description: `an index of ${count} assigned` },
      );
      await cluster.pserver(assigned.pserver)?.kill();
      notes['newOwnerKilledMs'] = Date.now() - askedMs;
    }
    const served = await cluster.waitUntilServed(askedMs, bound);
    const servedMs = Math.max(...served.map((event) => event.atMs));
    const handBacks = cluster.handedBack.slice(handedBefore).map((h) => h.atMs);
    return {
      name: `the running job changed from ${from} to ${count} shards${kill ? `, its ${kill} killed (-9) on the way` : ''}`,
      startMs: askedMs,
      referenceMs: servedMs,
      reference: `every one of the ${count} shards serving its restored share`,
      earlier:
        handBacks.length > 0
          ? { what: 'the last shard handed back', atMs: Math.max(...handBacks) }
          : undefined,
      notes: {
        ...notes,
        handedBack: handBacks.length,
        firstHandBackMs: handBacks.length > 0 ? Math.min(...handBacks) - askedMs : null,
      },
    };
  };
}

/** Milliseconds from `startMs` to the time a log line carries, or null without the line. */
function loggedAfter(line: Record<string, unknown> | undefined, startMs: number): number | null {
  return typeof line?.time === 'string' ? Date.parse(line.time) - startMs : null;
}

/** The first line `process` logs whose message passes `test`, within the bound (else undefined). */
function loggedLine(
  process: ManagedProcess,
  test: (msg: string) => boolean,
): Promise<Record<string, unknown> | undefined> {
  return process
    .waitForLog((e) => test(String(e.msg)), { timeoutMs: bound })
    .catch(() => undefined);
}

/** The steps every trainer acknowledged since `sinceMs`. */
function stepsSince(trainers: LedgerTrainer[], sinceMs: number): number {
  return trainers.reduce((n, t) => n + t.acksSince(sinceMs), 0);
}

/** The lab the cluster's processes run in (`SupervisedClusterOptions.network`). */
function labOf(cluster: SupervisedCluster): NetworkLab {
  const lab = cluster.options.network;
  if (!lab) throw new Error('a network fault needs the cluster in a network lab (options.network)');
  return lab;
}

/**
 * A network fault on the pserver serving `index` for `faultMs`, then healed: `etcd` cuts it off
 * from etcd alone (trainers, masters and its peers still reach it: nothing it serves changes,
 * yet it must stop acting before its lease is another's); `everyone` isolates it (a
 * zombie whose connections stay open). Either way it fences and exits, a spare takes the index
 * (the reference: the replacement serving), and the fault is healed `faultMs` after it began.
 */
export function cutPserver(index: number, from: 'etcd' | 'everyone', faultMs: number): Fault {
  return async (cluster) => {
    const lab = labOf(cluster);
    const { process, event } = serving(cluster, index);
    const fenced = loggedLine(process, (msg) => msg.startsWith('fenced'));
    const startMs = Date.now();
    if (from === 'etcd') lab.partition(event.pserver, 'etcd');
    else lab.isolate(event.pserver);
    try {
      const replacement = await cluster.waitForReplacement(index, event.epoch, bound);
      const fencedMs = loggedAfter(await fenced, startMs);
      await sleep(startMs + faultMs - Date.now());
      return {
        name: `the pserver of shard ${index} cut off from ${from} for ${faultMs} ms`,
        startMs,
        referenceMs: replacement.atMs,
        reference: 'the replacement serving',
        notes: {
          fencedMs,
          spareServingMs: replacement.atMs - startMs,
        },
      };
    } finally {
      lab.heal();
    }
  };
}

/**
 * The primary of shard `index` and its in-sync replica cut off from each other alone for
 * `faultMs` (both still reach etcd, the masters and the trainers), then healed: pushes wait for
 * the replica until the primary drops it (`--replica-lag-timeout-s`: it deletes the replica's key)
 * and goes on without it (the reference); a spare becomes the new replica. `droppedMs` is the
 * trainers' stall as the primary bounds it: from the cut to the drop. `replica → primary` cuts
 * one way only: the primary's forwards reach the replica, which applies them, but nothing the
 * replica sends (its acknowledgements, TCP's own) comes back.
 */
export function cutPrimaryFromReplica(
  index: number,
  faultMs: number,
  how: 'both ways' | 'replica → primary' = 'both ways',
): Fault {
  return async (cluster) => {
    const lab = labOf(cluster);
    const { process, event } = serving(cluster, index);
    const replica = await inSyncReplica(cluster, index);
    const dropped = process.waitForLog(
      (e) => e.msg === 'dropped a replica that left a push unapplied too long',
      { timeoutMs: bound },
    );
    const startMs = Date.now();
    if (how === 'both ways') lab.partition(event.pserver, replica.name);
    else lab.oneWay(replica.name, event.pserver);
    try {
      const droppedMs = loggedAfter(await dropped, startMs)!;
      await sleep(startMs + faultMs - Date.now());
      return {
        name:
          how === 'both ways'
            ? `the primary of shard ${index} cut off from its replica for ${faultMs} ms`
            : `the replica of shard ${index} unheard by its primary (one way) for ${faultMs} ms`,
        startMs,
        referenceMs: startMs + droppedMs,
        reference: 'the primary going on without the replica',
        notes: { droppedMs },
      };
    } finally {
      lab.heal();
    }
  };
}

/**
 * The leading master cut off from etcd alone for `faultMs` (trainers and pservers still reach
 * it), then healed: it must step down by its lease's local deadline (`steppedDownMs`), and another
 * master leads (the reference) once the old election lease has ended; the supervisor starts the cut
 * one again on its host, where it waits for etcd until the heal.
 */
export function cutLeadingMasterFromEtcd(faultMs: number): Fault {
  return async (cluster) => {
    const lab = labOf(cluster);
    const leader = cluster.leader();
    if (!leader) throw new Error('no master leads');
    // A master process `master-<slot>.<run>` runs on host `master-<slot>`.
    const host = leader.name.split('.')[0]!;
    const steppedDown = loggedLine(leader, (msg) => msg.includes('stepping down'));
    const startMs = Date.now();
    lab.partition(host, 'etcd');
    try {
      const next = await cluster.waitForLeader(startMs, bound);
      const steppedDownMs = loggedAfter(await steppedDown, startMs);
      await sleep(startMs + faultMs - Date.now());
      return {
        name: `the leading master cut off from etcd for ${faultMs} ms`,
        startMs,
        referenceMs: next.atMs,
        reference: 'another master leading',
        notes: {
          steppedDownMs,
          newLeaderMs: next.atMs - startMs,
        },
      };
    } finally {
      lab.heal();
    }
  };
}

/**
 * Trainer `ordinal` cut off from the pserver serving `index` alone for `faultMs` (it still
 * reaches the masters and the other shards; the other trainers reach everything), then healed
 * (the reference): its steps wait, none fails, and it steps again soon after the heal.
 */
export function cutTrainerFromShard(ordinal: number, index: number, faultMs: number): Fault {
  return async (cluster) => {
    const lab = labOf(cluster);
    const { event } = serving(cluster, index);
    const startMs = Date.now();
    lab.partition(`trainer-${ordinal}`, event.pserver);
    try {
      await sleep(faultMs);
    } finally {
      lab.heal();
    }
    return {
      name: `trainer ${ordinal} cut off from the pserver of shard ${index} for ${faultMs} ms`,
      startMs,
      referenceMs: Date.now(),
      reference: 'the heal',
      notes: {},
    };
  };
}

/**
 * Every link of the pserver serving `index` losing `fraction` of its packets each way for
 * `faultMs` (TCP retransmits them: slower, nothing cut), then healed (the reference). Notes the
 * steps the trainers acknowledged during the loss against as long a time just before.
 */
export function lossyPserver(index: number, fraction: number, faultMs: number): Fault {
  return async (cluster, trainers) => {
    const lab = labOf(cluster);
    const { event } = serving(cluster, index);
    const startMs = Date.now();
    const before = stepsSince(trainers, startMs - faultMs);
    lab.lossy(event.pserver, fraction);
    try {
      await sleep(faultMs);
    } finally {
      lab.heal();
    }
    const during = stepsSince(trainers, startMs);
    return {
      name: `the pserver of shard ${index} losing ${fraction * 100} % of its packets for ${faultMs} ms`,
      startMs,
      referenceMs: Date.now(),
      reference: 'the heal',
      notes: { stepsBefore: before, stepsDuring: during },
    };
  };
}

/**
 * Every link of the pserver serving `index` through a fault proxy for `faultMs`, each chunk
 * `latencyMs` ± `jitterMs` late each way (its open connections are reset and its clients connect
 * again, through the proxy), then healed (the reference): slower, nothing lost. Notes the steps
 * acknowledged during it against as long a time just before.
 */
export function latePserver(
  index: number,
  { latencyMs, jitterMs }: { latencyMs: number; jitterMs: number },
  faultMs: number,
): Fault {
  return async (cluster, trainers) => {
    const lab = labOf(cluster);
    const { event } = serving(cluster, index);
    const proxy = await FaultProxy.start(event.address, `${lab.subnet}.1`);
    proxy.set({ latencyMs, jitterMs });
    const startMs = Date.now();
    const before = stepsSince(trainers, startMs - faultMs);
    try {
      lab.throughProxy(event.pserver, Number(event.address.split(':').at(-1)), proxy.address);
      await sleep(faultMs);
    } finally {
      lab.heal();
      await proxy.close();
    }
    const during = stepsSince(trainers, startMs);
    return {
      name: `the links of the pserver of shard ${index} ${latencyMs} ± ${jitterMs} ms late for ${faultMs} ms`,
      startMs,
      referenceMs: Date.now(),
      reference: 'the heal',
      notes: { stepsBefore: before, stepsDuring: during },
    };
  };
}

/**
 * A one-member etcd that answers slowly, rather than not at all, for `faultMs`: it is stopped
 * (SIGSTOP) for `stallMs` of every `stallMs + runMs`, as an etcd whose disk stalls its every
 * write would be, so that each call waits up to `stallMs` and none fails; no connection is cut.
 * No lease may be lost — no pserver fences, no master steps down — and training goes on. Notes
 * the processes that exited, the masters that began leading and the shards served anew during it.
 */
export function slowEtcd(
  { stallMs, runMs }: { stallMs: number; runMs: number },
  faultMs: number,
): Fault {
  return async (cluster, trainers) => {
    const etcd = cluster.etcd;
    if (!('process' in etcd)) throw new Error('a slow etcd is a one-member etcd');
    const startMs = Date.now();
    const before = stepsSince(trainers, startMs - faultMs);
    while (Date.now() - startMs < faultMs) {
      etcd.process.signal('SIGSTOP');
      try {
        await sleep(stallMs);
      } finally {
        etcd.process.signal('SIGCONT');
      }
      await sleep(runMs);
    }
    const during = stepsSince(trainers, startMs);
    const since = <T extends { atMs: number }>(events: T[]) =>
      events.filter((e) => e.atMs >= startMs);
    return {
      name: `etcd stalled ${stallMs} ms in every ${stallMs + runMs} for ${faultMs} ms`,
      startMs,
      referenceMs: Date.now(),
      reference: 'the end of the stalls',
      notes: {
        stepsBefore: before,
        stepsDuring: during,
        exited: since(cluster.exits)
          .map((e) => `${e.name} (${e.signal ?? e.code})`)
          .join(', '),
        newLeaders: since(cluster.leading).length,
        servedAnew: since(cluster.serving).length,
      },
    };
  };
}

/**
 * A 3-member etcd split 2 + 1 for `faultMs`, then healed: the minority side is etcd's leader (so
 * that the majority must elect another), the leading master and the pserver serving `index`; the
 * majority side the other two members and every other master and pserver; trainers still reach
 * both sides. The minority
 * pserver must fence (no quorum renews its lease), a spare on the majority side takes its index,
 * the cut master steps down and the other leads. The reference: the later of the replacement
 * serving and the new leader.
 */
export function splitEtcd(index: number, faultMs: number): Fault {
  return async (cluster) => {
    const lab = labOf(cluster);
    const leader = cluster.leader();
    if (!leader) throw new Error('no master leads');
    const { process, event } = serving(cluster, index);
    const fenced = loggedLine(process, (msg) => msg.startsWith('fenced'));
    const steppedDown = loggedLine(leader, (msg) => msg.includes('stepping down'));
    if (!('leader' in cluster.etcd)) throw new Error('an etcd split needs several members');
    const etcdLeader = await cluster.etcd.leader();
    const minority = [etcdLeader.host.name, leader.name.split('.')[0]!, event.pserver];
    const majority = lab.hostNames.filter(
      (name) => !minority.includes(name) && !name.startsWith('trainer-'),
    );
    const startMs = Date.now();
    lab.split(minority, majority);
    try {
      // Leases lost to the election on the majority side are replaced too: that takes longer.
      const replacement = await cluster.waitForReplacement(index, event.epoch, 2 * bound);
      const next = await cluster.waitForLeader(startMs, 2 * bound);
      const [fencedLine, steppedDownLine] = await Promise.all([fenced, steppedDown]);
      await sleep(startMs + faultMs - Date.now());
      return {
        name: `etcd split 2 + 1 for ${faultMs} ms, the leading master and the pserver of shard ${index} with the one`,
        startMs,
        referenceMs: Math.max(replacement.atMs, next.atMs),
        reference: 'the index served again and another master leading',
        notes: {
          fencedMs: loggedAfter(fencedLine, startMs),
          spareServingMs: replacement.atMs - startMs,
          steppedDownMs: loggedAfter(steppedDownLine, startMs),
          newLeaderMs: next.atMs - startMs,
        },
      };
    } finally {
      lab.heal();
    }
  };
}
