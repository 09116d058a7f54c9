import type { ClientReadableStream } from '@grpc/grpc-js';
import type {
  BeginInitResponse__Output,
  ClusterView__Output,
  GetTaskResponse__Output,
  MasterClient,
  RegisterTrainerResponse__Output,
  SetDatasetRequest,
  SetDatasetResponse__Output,
  SetDesiredShardsResponse__Output,
  StatusResponse__Output,
} from '@pserver/proto';
import {
  callUnary,
  channelSecurity,
  fromServiceError,
  masterClient,
  type ClientSecurity,
  type RpcError,
} from '@pserver/rpc';

/**
 * A plain gRPC driver of one master replica for tests: each method is one call, a failure rejects
 * with `RpcError` (a follower's answer carries the leader in `facts.leader`). No leader following,
 * no retries: tests see what each replica answers.
 */
export class MasterDriver {
  readonly client: MasterClient;

  constructor(
    readonly address: string,
    private readonly timeoutMs = 10_000,
    security: ClientSecurity = {},
  ) {
    const channel = channelSecurity(security);
    this.client = masterClient(address, channel.credentials, channel.options);
  }

  registerTrainer(name: string): Promise<RegisterTrainerResponse__Output> {
    return callUnary(
      this.client.registerTrainer.bind(this.client),
      { name },
      { timeoutMs: this.timeoutMs },
    );
  }

  keepAlive(trainerId: number): Promise<unknown> {
    return callUnary(
      this.client.keepAlive.bind(this.client),
      { trainerId },
      { timeoutMs: this.timeoutMs },
    );
  }

  unregisterTrainer(trainerId: number): Promise<unknown> {
    return callUnary(
      this.client.unregisterTrainer.bind(this.client),
      { trainerId },
      { timeoutMs: this.timeoutMs },
    );
  }

  clusterView(): Promise<ClusterView__Output> {
    return callUnary(
      this.client.getClusterView.bind(this.client),
      {},
      { timeoutMs: this.timeoutMs },
    );
  }

  beginInit(trainerId: number): Promise<BeginInitResponse__Output> {
    return callUnary(
      this.client.beginInit.bind(this.client),
      { context: { trainerId } },
      { timeoutMs: this.timeoutMs },
    );
  }

  finishInit(trainerId: number): Promise<unknown> {
    return callUnary(
      this.client.finishInit.bind(this.client),
      { context: { trainerId } },
      { timeoutMs: this.timeoutMs },
    );
  }

  status(): Promise<StatusResponse__Output> {
    return callUnary(this.client.status.bind(this.client), {}, { timeoutMs: this.timeoutMs });
  }

  setDesiredShards(shardCount: number): Promise<SetDesiredShardsResponse__Output> {
    return callUnary(
      this.client.setDesiredShards.bind(this.client),
      { shardCount },
      { timeoutMs: this.timeoutMs },
    );
  }

  setDataset(request: SetDatasetRequest): Promise<SetDatasetResponse__Output> {
    return callUnary(this.client.setDataset.bind(this.client), request, {
      timeoutMs: this.timeoutMs,
    });
  }

  getTask(trainerId: number, pass: number): Promise<GetTaskResponse__Output> {
    return callUnary(
      this.client.getTask.bind(this.client),
      { context: { trainerId, pass } },
      { timeoutMs: this.timeoutMs },
    );
  }

  taskFinished(
    trainerId: number,
    task: { id: number; dispatch: number },
    records = 0,
  ): Promise<unknown> {
    return callUnary(
      this.client.taskFinished.bind(this.client),
      { context: { trainerId }, taskId: task.id, dispatch: task.dispatch, records },
      { timeoutMs: this.timeoutMs },
    );
  }

  taskFailed(
    trainerId: number,
    task: { id: number; dispatch: number },
    reason = '',
  ): Promise<unknown> {
    return callUnary(
      this.client.taskFailed.bind(this.client),
      { context: { trainerId }, taskId: task.id, dispatch: task.dispatch, reason },
      { timeoutMs: this.timeoutMs },
    );
  }

  /** Collects the views a WatchCluster stream sends until `stop()`. */
  watch(): { views: ClusterView__Output[]; error: () => RpcError | undefined; stop: () => void } {
    const views: ClusterView__Output[] = [];
    let failure: RpcError | undefined;
    const stream: ClientReadableStream<ClusterView__Output> = this.client.watchCluster({
      afterRevision: 0,
    });
    stream.on('data', (view: ClusterView__Output) => views.push(view));
    stream.on(
      'error',
      (err: Parameters<typeof fromServiceError>[0]) => (failure = fromServiceError(err)),
    );
    return { views, error: () => failure, stop: () => stream.cancel() };
  }

  close(): void {
    this.client.close();
  }
}
