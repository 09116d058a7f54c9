import type { SnapshotPools } from '@pserver/checkpoint';
import type { ClusterMember } from '@pserver/coordination';
import type { Logger } from '@pserver/logging';
import type { PserverConfig } from '../config';
import type { FailpointHook } from '../failpoint';
import type { PserverMetrics } from '../metrics';
import type { PeerClients } from '../replication/peer-calls';
import type { Shard } from '../shard/shard';

/** What every role takes from the process it runs in. */
export interface RoleContext {
  config: PserverConfig;
  logger: Logger;
  metrics: PserverMetrics;
  /** Cluster mode: this pserver's membership, and the address it registered for trainers. */
  cluster: { member: ClusterMember; address: string } | undefined;
  /** Test failpoints (`--failpoint`); undefined in production. */
  failpoint: FailpointHook | undefined;
  /** The process's snapshot memory, lent to each checkpoint and copy of every role in turn. */
  snapshotPools: SnapshotPools;
  /** How this pserver dials the others of its shard. */
  peers: PeerClients;
  /**
   * Before anything of shard `index` is recovered or written: refuses to go on (exit 5) when the
   * checkpoint directory, or the shard's in it, is not safe to restore from.
   */
  checkDirectory(index: number): Promise<void>;
  /**
   * A live change of the shard count: the shard this pserver hands back, every push in it, for
   * its receiving side to keep the slices that stay here (cluster only).
   */
  handingBack?(shard: Shard): void;
  /** The process's health: SERVING once a role serves a shard, NOT_SERVING when it stops. */
  setServing(serving: boolean): void;
}
