import type {
  BeginInitRequest__Output,
  BeginInitResponse,
  ClusterView,
  FinishInitRequest__Output,
  FinishInitResponse,
  FinishJobRequest__Output,
  FinishJobResponse,
  GetTaskRequest__Output,
  GetTaskResponse,
  KeepAliveRequest__Output,
  KeepAliveResponse,
  RegisterTrainerRequest__Output,
  RegisterTrainerResponse,
  SetDatasetRequest__Output,
  SetDatasetResponse,
  SetDesiredShardsRequest__Output,
  SetDesiredShardsResponse,
  StatusResponse,
  TaskFailedRequest__Output,
  TaskFailedResponse,
  TaskFinishedRequest__Output,
  TaskFinishedResponse,
  UnregisterTrainerRequest__Output,
  UnregisterTrainerResponse,
  WatchClusterRequest__Output,
} from '@pserver/proto';
import { sparesOf } from '@pserver/coordination';
import type { CallContext } from '@pserver/rpc';
import { MasterError } from './errors';
import type { View } from './cluster-view';
import type { LeaderRole } from './leader-role';
import { reshapeStatusOf } from './reshape-status';

/** The largest shard count a job may have (as `--desired-pservers` allows). */
export const maxShardCount = 100_000;

export interface MasterServiceOptions {
  /** This replica's address, for Status. */
  address: () => string;
  /** The leader's address, looked up when this replica is a follower. */
  leaderAddress: () => Promise<string | undefined>;
}

/**
 * The `Master` service without gRPC. Every method needs this replica to lead; a follower answers
 * MASTER_NOT_LEADER (UNAVAILABLE) with the leader's address in the `pserver-leader` trailer, so
 * clients go there.
 */
export class MasterService {
  private role: LeaderRole | undefined;

  constructor(private readonly options: MasterServiceOptions) {}

  /** Called when this replica starts or stops leading. */
  setRole(role: LeaderRole | undefined): void {
    this.role = role;
  }

  async registerTrainer(request: RegisterTrainerRequest__Output): Promise<RegisterTrainerResponse> {
    const role = await this.lead();
    if (role.state.finished)
      throw new MasterError(
        'MASTER_JOB_FINISHED',
        `job ${role.view.job}: finished (FinishJob); it takes no more trainers`,
      );
    const name = request.name.slice(0, 256);
    const session = await role.sessions.register(name, request.observer);
    return { trainerId: session.id, sessionTtlMs: role.sessions.sessionTtlMs, view: role.view };
  }

  async keepAlive(request: KeepAliveRequest__Output): Promise<KeepAliveResponse> {
    const role = await this.lead();
    if (!role.sessions.keepAlive(request.trainerId)) {
      throw new MasterError(
        'MASTER_SESSION_EXPIRED',
        `trainer ${request.trainerId}: the session has ended; register again`,
      );
    }
    return { sessionTtlMs: role.sessions.sessionTtlMs };
  }

  async unregisterTrainer(
    request: UnregisterTrainerRequest__Output,
  ): Promise<UnregisterTrainerResponse> {
    const role = await this.lead();
    await role.sessions.end(request.trainerId, 'unregistered');
    return {};
  }

  async getClusterView(): Promise<ClusterView> {
    return (await this.lead()).view;
  }

  /** The current view, then every new one, until the call is cancelled or this master stops leading. */
  async watchCluster(
    request: WatchClusterRequest__Output,
    ctx: CallContext,
    send: (view: ClusterView) => Promise<void>,
  ): Promise<void> {
    const role = await this.lead();
    const queue: View[] = [];
    let wake: (() => void) | undefined;
    const unsubscribe = role.subscribe((view) => {
      queue.push(view);
      wake?.();
    });
    const onAbort = (): void => wake?.();
    ctx.signal.addEventListener('abort', onAbort);
    // A role that stops (leadership lost, the master stopping) ends the stream at once.
    role.ended.addEventListener('abort', onAbort);
    try {
      if (role.view.revision > request.afterRevision) await send(role.view);
      while (!ctx.signal.aborted && !role.ended.aborted) {
        const view = queue.shift();
        if (view) await send(view);
        else await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      unsubscribe();
      ctx.signal.removeEventListener('abort', onAbort);
      role.ended.removeEventListener('abort', onAbort);
    }
    if (!ctx.signal.aborted) await this.lead(); // stopped leading: tell the client where to go
  }

  /** Exactly one live trainer initializes the parameters (see `MasterTerm.beginInit`). */
  async beginInit(request: BeginInitRequest__Output): Promise<BeginInitResponse> {
    const role = await this.lead();
    const { decision, owner } = await role.term.beginInit(
      request.context?.trainerId ?? 0,
      role.sessions,
    );
    return { decision, ownerTrainerId: owner };
  }

  async finishInit(request: FinishInitRequest__Output): Promise<FinishInitResponse> {
    const role = await this.lead();
    await role.term.finishInit(request.context?.trainerId ?? 0);
    await role.refresh();
    return {};
  }

  /** The job's dataset; only the first one counts (see `DatasetService`). */
  async setDataset(request: SetDatasetRequest__Output): Promise<SetDatasetResponse> {
    return (await this.lead()).dataset.setDataset(request);
  }

  async getTask(request: GetTaskRequest__Output): Promise<GetTaskResponse> {
    const role = await this.lead();
    return role.dataset.getTask(
      request.context?.trainerId ?? 0,
      request.context?.pass ?? 0,
      request.requestId,
    );
  }

  async taskFinished(request: TaskFinishedRequest__Output): Promise<TaskFinishedResponse> {
    const role = await this.lead();
    await role.dataset.taskFinished(
      request.context?.trainerId ?? 0,
      request.taskId,
      request.dispatch,
      request.records,
    );
    return {};
  }

  async taskFailed(request: TaskFailedRequest__Output): Promise<TaskFailedResponse> {
    const role = await this.lead();
    await role.dataset.taskFailed(
      request.context?.trainerId ?? 0,
      request.taskId,
      request.dispatch,
      request.reason.slice(0, 1024),
    );
    return {};
  }

  async status(): Promise<StatusResponse> {
    const role = await this.lead();
    return {
      leaderAddress: this.options.address(),
      view: role.view,
      trainers: role.sessions.list().map((s) => ({
        trainerId: s.id,
        name: s.name,
        registeredUnixMs: s.registeredAtUnixMs,
        pendingTasks: role.dataset.pendingOf(s.id),
      })),
      pass: role.dataset.passStatus(),
      spares: sparesOf(role.state).map((p) => ({ member: p.member, address: p.address })),
      reshape: reshapeStatusOf(role.state),
    };
  }

  /** Finishes the job once enough trainers asked (see `MasterTerm.finishJob`). */
  async finishJob(request: FinishJobRequest__Output): Promise<FinishJobResponse> {
    const role = await this.lead();
    const trainerId = request.context?.trainerId ?? 0;
    let name: string | undefined;
    if (trainerId !== 0) {
      role.sessions.requireAlive(trainerId);
      name = role.sessions.list().find((s) => s.id === trainerId)?.name;
    }
    const answer = await role.term.finishJob(name, request.trainers);
    await role.refresh();
    return answer;
  }

  /**
   * Admin: changes the desired shard count (see `MasterTerm.setDesired` for when it is refused);
   * answers the count before and the reshape pending after.
   */
  async setDesiredShards(
    request: SetDesiredShardsRequest__Output,
  ): Promise<SetDesiredShardsResponse> {
    // The view lists every index and the reconciler walks them: a count of 2^32 − 1 would run
    // the leader out of heap.
    if (request.shardCount > maxShardCount) {
      throw new MasterError(
        'MASTER_INVALID_ARGUMENT',
        `shardCount: must be at most ${maxShardCount}, got ${request.shardCount}`,
      );
    }
    const role = await this.lead();
    await role.refresh();
    const previous = role.state.desired ?? 0;
    await role.term.setDesired(request.shardCount, role.state);
    await role.refresh();
    return {
      shardCount: request.shardCount,
      previousShardCount: previous,
      reshape: reshapeStatusOf(role.state),
    };
  }

  private async lead(): Promise<LeaderRole> {
    if (this.role) return this.role;
    const leader = await this.options.leaderAddress().catch(() => undefined);
    throw new MasterError(
      'MASTER_NOT_LEADER',
      leader
        ? `this master is a follower; the leader is ${leader}`
        : 'no master leads right now; try again shortly',
      leader ? { leader } : undefined,
    );
  }
}
