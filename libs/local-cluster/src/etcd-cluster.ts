import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnProcess, type ManagedProcess } from './child-process';
import { etcdBinary, health, tiedToParent } from './etcd-server';
import type { LabHost, NetworkLab } from './network-lab';
import { waitFor } from './wait-for';

/** One member of an etcd cluster in a network lab. */
export interface EtcdMember {
  readonly host: LabHost;
  /** Its client URL, `http://<host address>:2379`. */
  readonly endpoint: string;
  readonly process: ManagedProcess;
}

/** A multi-member etcd whose members run on hosts of a network lab, so that tests can split it. */
export interface EtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Every member's client URL, comma-separated: what `--etcd-endpoints` takes. */
  readonly endpoint: string;
  /** The member that leads now (asked of each member's maintenance status). */
  leader(): Promise<EtcdMember>;
  /** Stops every member (SIGTERM, then SIGKILL) and deletes their data dirs. */
  stop(): Promise<void>;
}

/**
 * Starts an etcd member on each of `hosts` (ports 2379 and 2380 of its address), as one cluster,
 * and waits until every member is healthy (a leader elected). Heartbeats every 50 ms and elections
 * after 500 ms (etcd: 100 ms, 1 s): a lease is lost when its keep-alives fail for 2/3 of its TTL,
 * and the tests' 2 s leases must outlive the election that follows the loss of etcd's leader. With
 * pre-vote (etcd 3.4's default is off), a member that was cut off does not depose the leader when
 * it comes back, which would cost every lease a second election.
 */
export async function startEtcdCluster(
  lab: NetworkLab,
  hosts: LabHost[],
  { startTimeoutMs = 20_000, logDir }: { startTimeoutMs?: number; logDir?: string } = {},
): Promise<EtcdCluster> {
  const binary = etcdBinary();
  const [tied, ...prefix] = tiedToParent(binary);
  const tmpRoot = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const peers = hosts.map((host, i) => `m${i}=http://${host.address}:2380`).join(',');
  const dataDirs: string[] = [];
  const members: EtcdMember[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(members.map((member) => member.process.stop({ graceMs: 5_000 })));
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const [i, host] of hosts.entries()) {
      const dataDir = fs.mkdtempSync(path.join(tmpRoot, 'pserver-etcd-'));
      dataDirs.push(dataDir);
      const endpoint = `http://${host.address}:2379`;
      const [command, args] = lab.command(host, tied, [
        ...prefix,
        `--name=m${i}`,
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${endpoint}`,
        `--advertise-client-urls=${endpoint}`,
        `--listen-peer-urls=http://${host.address}:2380`,
        `--initial-advertise-peer-urls=http://${host.address}:2380`,
        `--initial-cluster=${peers}`,
        '--initial-cluster-state=new',
        '--logger=zap',
        '--log-level=warn',
        '--heartbeat-interval=50',
        '--election-timeout=500',
        '--pre-vote=true',
      ]);
      const process = spawnProcess(command, args, { name: `etcd-${host.name}`, logDir });
      members.push({ host, endpoint, process });
    }
    await Promise.all(
      members.map(({ endpoint, process }) =>
        waitFor(
          async () => {
            if (!process.running) throw process.failure('etcd exited during start');
            return (await health(endpoint, undefined)) === 'true';
          },
          { timeoutMs: startTimeoutMs, intervalMs: 50, description: `etcd at ${endpoint} healthy` },
        ),
      ),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const leader = async (): Promise<EtcdMember> => {
    for (const member of members) {
      const status = await maintenanceStatus(member.endpoint).catch(() => undefined);
      if (status && status.header.member_id === status.leader) return member;
    }
    throw new Error('no etcd member says it leads');
  };
  return { members, endpoint: members.map((m) => m.endpoint).join(','), leader, stop };
}

/** etcd's `Maintenance.Status` through its JSON gateway: this member's id and the leader's. */
async function maintenanceStatus(
  endpoint: string,
): Promise<{ header: { member_id: string }; leader: string }> {
  const response = await fetch(`${endpoint}/v3/maintenance/status`, {
    method: 'POST',
    body: '{}',
    signal: AbortSignal.timeout(2_000),
  });
  return (await response.json()) as { header: { member_id: string }; leader: string };
}
