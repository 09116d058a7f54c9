import type {
  GetParamsResponse__Output,
  GetRowsResponse__Output,
  SparseGrad,
  TableSpec,
  GetShardStatusResponse__Output,
  ParameterServerClient,
  RequestContext,
  SendGradsChunk,
  SaveCheckpointResponse__Output,
  SendGradsResponse__Output,
  Tensor,
  OptimizerConfig,
} from '@pserver/proto';
import {
  callClientStream,
  callUnary,
  channelSecurity,
  clientChannelOptions,
  parameterServerClient,
  type ClientSecurity,
} from '@pserver/rpc';

export interface PserverDriverOptions {
  maxMessageBytes: number;
  flowControlWindowBytes: number;
  timeoutMs: number;
  /** TLS and token; plaintext when absent. */
  security?: ClientSecurity;
  /**
   * A connection of this driver's own, instead of the one grpc-js shares between clients of the
   * same address. Two Node.js HTTP/2 peers that both write large messages on one connection can
   * stall each other (each stops reading while its own write waits for the other to read), so a
   * test that pushes and pulls large tensors at once does so on separate connections.
   */
  ownConnection?: boolean;
  /**
   * Keepalive pings (default on, as every client channel): false for a test of what the server
   * answers a call that waited through a pause of the server longer than the pings' 5 s, which the
   * pings would otherwise end first.
   */
  keepalive?: boolean;
}

export const defaultPserverDriverOptions: PserverDriverOptions = {
  maxMessageBytes: 256 * 1024 * 1024,
  flowControlWindowBytes: 32 * 1024 * 1024,
  timeoutMs: 30_000,
};

/**
 * A plain gRPC driver of one pserver for tests and benchmarks: each method is one call, and a
 * failure rejects with `RpcError`. It adds nothing of the trainer client (no placement, no
 * retries), so tests see exactly what the server answers.
 */
export class PserverDriver {
  readonly client: ParameterServerClient;
  private readonly timeoutMs: number;

  constructor(
    readonly address: string,
    options: Partial<PserverDriverOptions> = {},
  ) {
    const settings = { ...defaultPserverDriverOptions, ...options };
    this.timeoutMs = settings.timeoutMs;
    const channel = channelSecurity(settings.security);
    this.client = parameterServerClient(address, channel.credentials, {
      ...clientChannelOptions(settings),
      ...channel.options,
      ...(settings.ownConnection && { 'grpc.use_local_subchannel_pool': 1 }),
      ...(settings.keepalive === false && { 'grpc.keepalive_time_ms': -1 }),
    });
  }

  /** The shard's status; with `trainerId`, also that trainer's last step on it. */
  status(timeoutMs = this.timeoutMs, trainerId?: number): Promise<GetShardStatusResponse__Output> {
    const request = trainerId === undefined ? {} : { context: { trainerId } };
    return callUnary(this.client.getShardStatus.bind(this.client), request, { timeoutMs });
  }

  /** The shard's epoch, as a trainer learns it in standalone mode. */
  async epoch(): Promise<number> {
    return (await this.status()).shardEpoch;
  }

  initParam(context: RequestContext, param: Tensor, optimizer?: OptimizerConfig): Promise<unknown> {
    return callUnary(
      this.client.initParam.bind(this.client),
      { context, param, optimizer },
      { timeoutMs: this.timeoutMs },
    );
  }

  finishInitParams(context: RequestContext): Promise<unknown> {
    return callUnary(
      this.client.finishInitParams.bind(this.client),
      { context },
      { timeoutMs: this.timeoutMs },
    );
  }

  initTable(context: RequestContext, spec: TableSpec): Promise<unknown> {
    return callUnary(
      this.client.initTable.bind(this.client),
      { context, spec },
      { timeoutMs: this.timeoutMs },
    );
  }

  /** Rows of `table` for `ids` (int64 LE bytes, e.g. a BigInt64Array's). */
  getRows(
    context: RequestContext,
    table: string,
    ids: Uint8Array,
  ): Promise<GetRowsResponse__Output> {
    return callUnary(
      this.client.getRows.bind(this.client),
      { context, table, ids },
      { timeoutMs: this.timeoutMs },
    );
  }

  sendGrads(
    context: RequestContext,
    grads: Tensor[],
    sparse: SparseGrad[] = [],
  ): Promise<SendGradsResponse__Output> {
    return callUnary(
      this.client.sendGrads.bind(this.client),
      { context, grads, sparse },
      { timeoutMs: this.timeoutMs },
    );
  }

  sendGradsStream(
    chunks: Iterable<SendGradsChunk> | AsyncIterable<SendGradsChunk>,
  ): Promise<SendGradsResponse__Output> {
    return callClientStream(this.client.sendGradsStream.bind(this.client), chunks, {
      timeoutMs: this.timeoutMs,
    });
  }

  getParams(
    context: RequestContext,
    names: string[],
    timeoutMs = this.timeoutMs,
  ): Promise<GetParamsResponse__Output> {
    return callUnary(this.client.getParams.bind(this.client), { context, names }, { timeoutMs });
  }

  /** Writes and commits a checkpoint now. */
  saveCheckpoint(timeoutMs = this.timeoutMs): Promise<SaveCheckpointResponse__Output> {
    return callUnary(this.client.saveCheckpoint.bind(this.client), {}, { timeoutMs });
  }

  close(): void {
    this.client.close();
  }
}

/** The little-endian bytes of a typed array, as a tensor's `content`. */
export function bytesOf(array: ArrayBufferView): Buffer {
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

/** Reads `content` bytes (at any alignment) as float32 values. */
export function float32s(content: Uint8Array): number[] {
  return [...new Float32Array(Uint8Array.from(content).buffer)];
}

/** Reads `content` bytes (at any alignment) as float64 values. */
export function float64s(content: Uint8Array): number[] {
  return [...new Float64Array(Uint8Array.from(content).buffer)];
}
