import { status, type ClientReadableStream } from '@grpc/grpc-js';
import type { Logger } from '@pserver/logging';
import type {
  BeginInitResponse__Output,
  ClusterView__Output,
  FinishJobResponse__Output,
  GetTaskResponse__Output,
  MasterClient,
  RegisterTrainerResponse__Output,
  SetDatasetRequest,
  SetDatasetResponse__Output,
} from '@pserver/proto';
import {
  backoffPolicies,
  callUnary,
  channelSecurity,
  fromServiceError,
  keepaliveChannelOptions,
  masterClient,
  onAbort,
  retry,
  RetryDeadlineError,
  RpcError,
  type ClientSecurity,
} from '@pserver/rpc';
import { ClientError } from './errors';

type UnaryName =
  | 'registerTrainer'
  | 'keepAlive'
  | 'unregisterTrainer'
  | 'getClusterView'
  | 'beginInit'
  | 'finishInit'
  | 'setDataset'
  | 'getTask'
  | 'taskFinished'
  | 'taskFailed'
  | 'finishJob';

/** How a trainer registers: its name, and whether it is an observer (never takes steps). */
export interface TrainerRegistration {
  name: string;
  observer: boolean;
}

/**
 * Talks to the leading master among the replicas given. A follower answers UNAVAILABLE with the
 * leader's address in the `pserver-leader` trailer: the link goes there. A replica that does not
 * answer is skipped; the link tries the others, with a short backoff, until the call's deadline.
 */
export class MasterLink {
  private readonly clients = new Map<string, MasterClient>();
  private current: string;
  private readonly channel: ReturnType<typeof channelSecurity>;

  constructor(
    private readonly addresses: string[],
    private readonly logger: Logger,
    private readonly timeoutMs = 10_000,
    security: ClientSecurity = {},
  ) {
    this.channel = channelSecurity(security);
    if (addresses.length === 0)
      throw new ClientError('CLIENT_NO_MASTER', 'connect: no master address given');
    this.current = addresses[0]!;
  }

  /** The replica the link talks to now. */
  get address(): string {
    return this.current;
  }

  registerTrainer(
    registration: TrainerRegistration,
    signal?: AbortSignal,
  ): Promise<RegisterTrainerResponse__Output> {
    return this.call('registerTrainer', registration, signal);
  }

  keepAlive(trainerId: number, signal?: AbortSignal): Promise<unknown> {
    return this.call('keepAlive', { trainerId }, signal);
  }

  unregisterTrainer(trainerId: number, signal?: AbortSignal): Promise<unknown> {
    return this.call('unregisterTrainer', { trainerId }, signal);
  }

  getClusterView(signal?: AbortSignal): Promise<ClusterView__Output> {
    return this.call('getClusterView', {}, signal);
  }

  beginInit(trainerId: number, signal?: AbortSignal): Promise<BeginInitResponse__Output> {
    return this.call('beginInit', { context: { trainerId } }, signal);
  }

  finishInit(trainerId: number, signal?: AbortSignal): Promise<unknown> {
    return this.call('finishInit', { context: { trainerId } }, signal);
  }

  finishJob(
    trainerId: number,
    trainers: number,
    signal?: AbortSignal,
  ): Promise<FinishJobResponse__Output> {
    return this.call('finishJob', { context: { trainerId }, trainers }, signal);
  }

  setDataset(
    request: SetDatasetRequest,
    signal?: AbortSignal,
  ): Promise<SetDatasetResponse__Output> {
    return this.call('setDataset', request, signal);
  }

  /**
   * `requestId` names one logical GetTask: every attempt of this call sends it (also to a new
   * leader), so one whose reply was lost is answered with the task it took.
   */
  getTask(
    trainerId: number,
    pass: number,
    requestId: string,
    signal?: AbortSignal,
  ): Promise<GetTaskResponse__Output> {
    return this.call('getTask', { context: { trainerId, pass }, requestId }, signal);
  }

  taskFinished(
    trainerId: number,
    task: { id: number; dispatch: number; pass: number },
    records: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const { id: taskId, dispatch, pass } = task;
    return this.call(
      'taskFinished',
      { context: { trainerId, pass }, taskId, dispatch, records },
      signal,
    );
  }

  taskFailed(
    trainerId: number,
    task: { id: number; dispatch: number; pass: number },
    reason: string,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const { id: taskId, dispatch, pass } = task;
    return this.call(
      'taskFailed',
      { context: { trainerId, pass }, taskId, dispatch, reason },
      signal,
    );
  }

  /** One unary call to the leader, following redirects and skipping dead replicas. */
  private async call<Res>(name: UnaryName, request: object, signal?: AbortSignal): Promise<Res> {
    const deadline = performance.now() + this.timeoutMs;
    const attempt = async (): Promise<Res> => {
      const client = this.client(this.current);
      try {
        // The generated client overloads each method; the (request, metadata, options, callback)
        // form is the one callUnary uses.
        const method = (
          client[name] as unknown as Parameters<typeof callUnary<object, Res>>[0]
        ).bind(client);
        return await callUnary(method, request, {
          timeoutMs: Math.max(1, deadline - performance.now()),
          signal,
        });
      } catch (err) {
        if (isUnavailable(err)) this.moveOn(err);
        throw err;
      }
    };
    try {
      return await retry(attempt, {
        policy: backoffPolicies.masterFailover,
        signal,
        timeoutMs: this.timeoutMs,
        retryIf: isUnavailable,
      });
    } catch (err) {
      if (!(err instanceof RetryDeadlineError)) throw err;
      throw new ClientError(
        'CLIENT_NO_MASTER',
        `no master answered within ${this.timeoutMs} ms (${this.addresses.join(', ')})`,
        { cause: err.cause },
      );
    }
  }

  /**
   * Streams cluster views from the leader to `onView` until `signal` aborts, reconnecting (and
   * following the leader) whenever the stream ends.
   */
  async watch(onView: (view: ClusterView__Output) => void, signal: AbortSignal): Promise<void> {
    await retry(() => this.watchOnce(onView, signal), {
      policy: backoffPolicies.masterWatch,
      signal,
      again: () => true,
    }).catch((err: unknown) => {
      if (!signal.aborted) throw err;
    });
  }

  /** One stream of cluster views from the replica the link talks to, until it ends. */
  private watchOnce(
    onView: (view: ClusterView__Output) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const client = this.client(this.current);
    return new Promise<void>((resolve) => {
      const stream: ClientReadableStream<ClusterView__Output> = client.watchCluster({
        afterRevision: 0,
      });
      const unlink = onAbort(signal, () => stream.cancel());
      stream.on('data', (view: ClusterView__Output) => {
        try {
          onView(view);
        } catch (err) {
          this.logger.error('a cluster view could not be applied', { err });
        }
      });
      stream.on('error', (err: Parameters<typeof fromServiceError>[0]) => {
        if (!signal.aborted) this.moveOn(fromServiceError(err));
      });
      stream.on('close', () => {
        unlink();
        resolve();
      });
    });
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private moveOn(err: RpcError): void {
    const leader = err.facts.leader;
    const next =
      leader && leader !== this.current
        ? leader
        : this.addresses[(this.addresses.indexOf(this.current) + 1) % this.addresses.length]!;
    if (next !== this.current)
      this.logger.debug('master: moving on', { from: this.current, to: next, reason: err.message });
    this.current = next;
  }

  private client(address: string): MasterClient {
    let client = this.clients.get(address);
    if (!client) {
      client = masterClient(address, this.channel.credentials, {
        ...keepaliveChannelOptions,
        ...this.channel.options,
      });
      this.clients.set(address, client);
    }
    return client;
  }
}

/** A replica that does not answer, or a follower (it names the leader): try elsewhere. */
function isUnavailable(err: unknown): err is RpcError {
  return err instanceof RpcError && err.status === status.UNAVAILABLE;
}
