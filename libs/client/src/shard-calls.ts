import type {
  GetParamsResponse__Output,
  GetShardStatusResponse__Output,
  ListParamsResponse__Output,
  OptimizerConfig,
  ParameterServerClient,
  RequestContext,
  SendGradsChunk,
  SendGradsResponse__Output,
  Tensor,
} from '@pserver/proto';
import {
  callClientStream,
  callUnary,
  channelSecurity,
  clientChannelOptions,
  parameterServerClient,
  type ClientSecurity,
} from '@pserver/rpc';

export interface ShardCallOptions {
  maxMessageBytes: number;
  flowControlWindowBytes: number;
  timeoutMs: number;
  /** Pushes larger than this are streamed in pieces of this size. */
  streamChunkBytes: number;
  /** TLS and token; plaintext when absent. */
  security?: ClientSecurity;
}

/** What ends a call: its caller's signal, and a deadline (`Date.now()` ms) it cannot outlive. */
export interface CallLimits {
  signal?: AbortSignal;
  deadline?: number;
}

/** The pserver calls the client makes, one gRPC client per address, each call with a deadline. */
export class ShardCalls {
  private readonly clients = new Map<string, ParameterServerClient>();
  private readonly channel: ReturnType<typeof channelSecurity>;

  constructor(private readonly options: ShardCallOptions) {
    this.channel = channelSecurity(options.security);
  }

  /** The largest message sent or received. */
  get maxMessageBytes(): number {
    return this.options.maxMessageBytes;
  }

  status(address: string, limits: CallLimits = {}): Promise<GetShardStatusResponse__Output> {
    const client = this.client(address);
    return callUnary(client.getShardStatus.bind(client), {}, this.settings(limits));
  }

  initParam(
    address: string,
    context: RequestContext,
    param: Tensor,
    optimizer: OptimizerConfig | undefined,
    limits: CallLimits = {},
  ): Promise<unknown> {
    const client = this.client(address);
    return callUnary(
      client.initParam.bind(client),
      { context, param, optimizer },
      this.settings(limits),
    );
  }

  finishInitParams(
    address: string,
    context: RequestContext,
    limits: CallLimits = {},
  ): Promise<unknown> {
    const client = this.client(address);
    return callUnary(client.finishInitParams.bind(client), { context }, this.settings(limits));
  }

  getParams(
    address: string,
    context: RequestContext,
    names: string[],
    limits: CallLimits = {},
  ): Promise<GetParamsResponse__Output> {
    const client = this.client(address);
    return callUnary(client.getParams.bind(client), { context, names }, this.settings(limits));
  }

  listParams(
    address: string,
    context: RequestContext,
    limits: CallLimits = {},
  ): Promise<ListParamsResponse__Output> {
    const client = this.client(address);
    return callUnary(client.listParams.bind(client), { context }, this.settings(limits));
  }

  /** One push: unary when it fits in a message, else streamed in pieces (applied all or nothing). */
  sendGrads(
    address: string,
    context: RequestContext,
    grads: Tensor[],
    limits: CallLimits = {},
  ): Promise<SendGradsResponse__Output> {
    const client = this.client(address);
    const bytes = grads.reduce((total, g) => total + (g.content as Uint8Array).byteLength, 0);
    if (bytes + 64 * grads.length + 1024 < this.options.maxMessageBytes) {
      return callUnary(client.sendGrads.bind(client), { context, grads }, this.settings(limits));
    }
    return callClientStream(
      client.sendGradsStream.bind(client),
      this.pieces(context, grads),
      this.settings(limits),
    );
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private *pieces(context: RequestContext, grads: Tensor[]): Iterable<SendGradsChunk> {
    const chunk = this.options.streamChunkBytes;
    let first = true;
    for (const grad of grads) {
      const content = grad.content as Uint8Array;
      for (let offset = 0; offset < content.byteLength || offset === 0; offset += chunk) {
        yield {
          context: first ? context : undefined,
          grads: [
            {
              name: grad.name,
              elementType: grad.elementType,
              // The pserver reads the shape from a gradient's first piece only.
              shape: offset === 0 ? grad.shape : [],
              offset,
              content: content.subarray(offset, offset + chunk),
            },
          ],
        };
        first = false;
        if (content.byteLength === 0) break;
      }
    }
  }

  private settings(limits: CallLimits): { timeoutMs: number; signal?: AbortSignal } {
    const left = (limits.deadline ?? Infinity) - Date.now();
    return {
      timeoutMs: Math.max(1, Math.min(this.options.timeoutMs, left)),
      signal: limits.signal,
    };
  }

  private client(address: string): ParameterServerClient {
    let client = this.clients.get(address);
    if (!client) {
      client = parameterServerClient(address, this.channel.credentials, {
        ...clientChannelOptions(this.options),
        ...this.channel.options,
      });
      this.clients.set(address, client);
    }
    return client;
  }
}
