import path from 'node:path';
import type { ReplicaTenure } from '@pserver/coordination';
import type { ReplicationStatus } from '../metrics';
import { ReplicaFollower } from '../replication/replica-follower';
import type { ReplicationRole } from '../replication/replication-service';
import type { Shard } from '../shard/shard';
import type { HeldState } from '../persistence/leave-state';
import type { RoleContext } from './role-context';

/**
 * One tenure of a replica key: a copy of a shard kept for its primary (`ReplicaFollower`) — fetched
 * and loaded, then kept in step with the pushes the primary forwards — until the key goes.
 */
export class ReplicaRole {
  readonly kind = 'replica';
  readonly follower: ReplicaFollower;

  constructor(
    readonly tenure: ReplicaTenure,
    private readonly context: RoleContext,
    /** A forward the copy could not take: the copy is no state to keep or to leave anyone. */
    onDiverged: (reason: string) => void,
  ) {
    const { config, logger, peers, failpoint } = context;
    this.follower = new ReplicaFollower({
      tenure,
      member: config.member,
      // Its own: a job's pservers may share the checkpoint directory.
      scratchDir: path.join(
        config.checkpointDir,
        '.replication',
        `in-${encodeURIComponent(config.member)}`,
      ),
      primary: peers.primaryCalls(tenure.primaryAddress, {
        index: tenure.index,
        primaryEpoch: tenure.primaryEpoch,
        member: config.member,
      }),
      logger: logger.child({ component: 'replica' }),
      onDiverged,
      stalled: () => failpoint?.('forward') === true,
    });
  }

  get index(): number {
    return this.tenure.index;
  }

  get primaryEpoch(): number {
    return this.tenure.primaryEpoch;
  }

  /** The replica key's revision: the same key seen again is the same tenure. */
  get keyRevision(): number {
    return this.tenure.replica.createRevision;
  }

  /** The copy, when it holds every push the primary acknowledged: a promotion serves it. */
  get caughtUpCopy(): Shard | undefined {
    return this.follower.caughtUp ? this.follower.shard : undefined;
  }

  /** Fetches the primary's copy and follows it, in the background. */
  start(): void {
    const { tenure } = this;
    this.context.logger.info('replicating a shard', {
      index: tenure.index,
      primaryEpoch: tenure.primaryEpoch,
      primary: tenure.primaryAddress,
    });
    void this.follower.join();
  }

  /** Calls `listener` when the replica key goes (promoted, dropped, or the lease lost). */
  onEnded(listener: (reason: string) => void): void {
    this.tenure.onLost(listener);
  }

  /** Stops following: forwards waiting are refused. */
  stop(): void {
    this.follower.stop();
  }

  /** Stops following and gives the replica key back. */
  async close(): Promise<void> {
    this.follower.stop();
    await this.tenure.close();
  }

  /**
   * What a fenced replica leaves for the shard's next owner: its copy when in sync (it holds every
   * acknowledged push then); a copy not yet in sync holds less, and is left to no one.
   */
  heldState(): HeldState | undefined {
    const { follower, tenure } = this;
    return follower.inSync && follower.shard
      ? { shard: follower.shard, epoch: tenure.primaryEpoch }
      : undefined;
  }

  /** What the replication calls act on: the copy kept. */
  replication(): ReplicationRole {
    return { kind: 'replica', follower: this.follower };
  }

  replicationStatus(): ReplicationStatus {
    const { follower } = this;
    return {
      role: 'replica',
      appliedSeq: follower.shard?.appliedSeq ?? 0,
      inSync: follower.inSync,
      digests: follower.digests,
    };
  }
}
