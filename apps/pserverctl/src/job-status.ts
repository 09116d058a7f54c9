import type { Consistency__Output, StatusResponse__Output } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import type { Connection } from './connection';
import { pendingReshapeOf, type PendingReshape } from './reshape-text';

/** A job as `pserverctl status` shows it: what the masters and every shard's pserver answer. */
export interface JobStatus {
  job: string;
  masters: { address: string; role: 'leader' | 'follower' | 'unreachable'; error?: string }[];
  /** The leader's address (as its replicas advertise it), when one answered. */
  leader?: string;
  consistency?: string;
  /** Replicas the job keeps of each shard. */
  replicas?: number;
  initialized?: boolean;
  /** The job is finished (FinishJob): its pservers are leaving, or gone. */
  finished?: boolean;
  shards: ShardStatus[];
  /** Pservers that hold no shard and keep no replica. */
  spares: { member: string; address: string }[];
  /** A change of the shard count still being restored. */
  reshape?: PendingReshape;
  trainers: { id: number; name: string; registeredUnixMs: number; pendingTasks: number }[];
  pass?: { pass: number; todo: number; pending: number; done: number; failed: number };
  /**
   * Whether a master leads and every shard is served (or the job is finished): what exit code 3
   * says is not so.
   */
  healthy: boolean;
}

export interface ShardStatus {
  index: number;
  /** `serving`; `recovering`: assigned, restoring its checkpoint or copy; `unassigned`. */
  state: 'serving' | 'recovering' | 'unassigned';
  member: string;
  address: string;
  epoch: number;
  /** Seconds since the shard's last committed checkpoint (its pserver's status). */
  checkpointAgeSeconds?: number;
  /** SYNC: steps closed; otherwise pushes applied since the shard's state began. */
  version?: number;
  bytes?: number;
  /** The replicas the view names; `lagPushes` as the primary counts them (its status). */
  replicas: { member: string; address: string; inSync: boolean; lagPushes?: number }[];
  /** During a live change of the count: the receivers copying this shard's slices (its status). */
  moves?: MoveStatus[];
  /** Why the pserver's status could not be read. */
  error?: string;
}

/** How far a receiver of a live move is with one old shard's slices. */
export interface MoveStatus {
  member: string;
  /** The index of the new count it receives, and that count. */
  index: number;
  shardCount: number;
  /** The size of its copy (0 until written) and the bytes of it sent. */
  copyBytes: number;
  sentBytes: number;
  /** `copying` its copy; `catching up` with the pushes since (`lagPushes`); `caught up`. */
  state: 'copying' | 'catching up' | 'caught up';
  lagPushes: number;
}

/**
 * Asks every master for the job's status (the leader answers; followers say they are not), then
 * every assigned shard's pserver for its own.
 */
export async function jobStatus(connection: Connection, masters: string[]): Promise<JobStatus> {
  let answer: StatusResponse__Output | undefined;
  const replicas = await Promise.all(
    masters.map(async (address): Promise<JobStatus['masters'][number]> => {
      try {
        const status = await connection.status(address);
        answer ??= status;
        return { address, role: 'leader' };
      } catch (err) {
        if (err instanceof RpcError && err.code === 'MASTER_NOT_LEADER')
          return { address, role: 'follower' };
        return { address, role: 'unreachable', error: (err as Error).message };
      }
    }),
  );
  if (!answer?.view)
    return { job: '', masters: replicas, shards: [], spares: [], trainers: [], healthy: false };
  const view = answer.view;
  const shards = await Promise.all(
    view.shards.map(async (s): Promise<ShardStatus> => {
      const shard: ShardStatus = {
        index: s.index,
        state: s.serving ? 'serving' : s.address ? 'recovering' : 'unassigned',
        member: s.member,
        address: s.address,
        epoch: Number(s.shardEpoch),
        replicas: s.replicas.map((r) => ({
          member: r.member,
          address: r.address,
          inSync: r.inSync,
        })),
      };
      if (!s.address) return shard;
      try {
        const status = await connection.shardStatus(s.address);
        const taken = status.lastCheckpoint ? Number(status.lastCheckpoint.timestampNs) : 0;
        if (taken > 0) shard.checkpointAgeSeconds = Math.max(0, Date.now() / 1000 - taken / 1e9);
        shard.version = Number(status.version);
        shard.bytes = Number(status.totalBytes);
        for (const replica of shard.replicas) {
          const progress = status.replicas.find((r) => r.member === replica.member);
          if (progress)
            replica.lagPushes = Math.max(0, Number(status.appliedSeq) - Number(progress.ackedSeq));
        }
        if (status.moves.length > 0)
          shard.moves = status.moves.map((m) => {
            const lagPushes = Math.max(0, Number(status.appliedSeq) - Number(m.ackedSeq));
            return {
              member: m.member,
              index: m.index,
              shardCount: m.shardCount,
              copyBytes: Number(m.copyBytes),
              sentBytes: Number(m.sentBytes),
              state: !m.loaded ? 'copying' : lagPushes > 0 ? 'catching up' : 'caught up',
              lagPushes,
            };
          });
      } catch (err) {
        shard.error = (err as Error).message;
      }
      return shard;
    }),
  );
  return {
    job: view.job,
    masters: replicas,
    leader: answer.leaderAddress || undefined,
    consistency: describe(view.consistency),
    replicas: view.replicas,
    initialized: view.initialized,
    finished: view.finished,
    shards,
    spares: answer.spares.map((s) => ({ member: s.member, address: s.address })),
    ...(answer.reshape && { reshape: pendingReshapeOf(answer.reshape) }),
    trainers: answer.trainers.map((t) => ({
      id: Number(t.trainerId),
      name: t.name,
      registeredUnixMs: Number(t.registeredUnixMs),
      pendingTasks: Number(t.pendingTasks),
    })),
    ...(answer.pass && {
      pass: {
        pass: Number(answer.pass.pass),
        todo: Number(answer.pass.todo),
        pending: Number(answer.pass.pending),
        done: Number(answer.pass.done),
        failed: Number(answer.pass.failed),
      },
    }),
    healthy: view.finished || (shards.length > 0 && shards.every((s) => s.state === 'serving')),
  };
}

function describe(consistency: Consistency__Output | null): string {
  switch (consistency?.mode) {
    case 'CONSISTENCY_MODE_SYNC':
      return consistency.replicasToAggregate > 0
        ? `sync (${consistency.replicasToAggregate} of the trainers close a step)`
        : 'sync';
    case 'CONSISTENCY_MODE_BOUNDED_STALENESS':
      return `ssp:${consistency.staleness}`;
    default:
      return 'async';
  }
}
