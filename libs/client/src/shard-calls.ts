import type {
  GetParamsResponse__Output,
  GetRowsResponse__Output,
  GetShardStatusResponse__Output,
  ListParamsResponse__Output,
  OptimizerConfig,
  ParameterServerClient,
  RequestContext,
  SendGradsChunk,
  SendGradsResponse__Output,
  SparseGrad,
  TableSpec,
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

  /** The shard's status; with a trainer id, also that trainer's last step on it. */
  status(
    address: string,
    limits: CallLimits = {},
    trainerId = 0,
  ): Promise<GetShardStatusResponse__Output> {
    const client = this.client(address);
    return callUnary(
      client.getShardStatus.bind(client),
      { context: { trainerId } },
      this.settings(limits),
    );
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

  /** Creates a table's part (its buckets) on the shard; before FinishInitParams, as InitParam. */
  initTable(
    address: string,
    context: RequestContext,
    spec: TableSpec,
    limits: CallLimits = {},
  ): Promise<unknown> {
    const client = this.client(address);
    return callUnary(client.initTable.bind(client), { context, spec }, this.settings(limits));
  }

  /** Rows of a table by id (int64 little-endian bytes), read-only, in request order. */
  getRows(
    address: string,
    context: RequestContext,
    table: string,
    ids: Uint8Array,
    limits: CallLimits = {},
  ): Promise<GetRowsResponse__Output> {
    const client = this.client(address);
    return callUnary(client.getRows.bind(client), { context, table, ids }, this.settings(limits));
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

  /**
   * One push, dense and row gradients together: unary when it fits in a message, else streamed
   * in pieces (applied all or nothing), the row gradients in slices of whole rows. `sampleCount`,
   * when given, is the push's weight in a SYNC step (0: a step without data, no gradients).
   */
  sendGrads(
    address: string,
    context: RequestContext,
    grads: Tensor[],
    limits: CallLimits = {},
    sparse: readonly SparseGrad[] = [],
    sampleCount?: number,
  ): Promise<SendGradsResponse__Output> {
    const client = this.client(address);
    const counted = sampleCount === undefined ? {} : { sampleCount };
    if (fitsOneMessage(grads, sparse, this.options.maxMessageBytes)) {
      return callUnary(
        client.sendGrads.bind(client),
        { context, grads, sparse: [...sparse], ...counted },
        this.settings(limits),
      );
    }
    return callClientStream(
      client.sendGradsStream.bind(client),
      pushPieces(context, grads, sparse, this.options.streamChunkBytes, sampleCount),
      this.settings(limits),
    );
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
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

/** Whether a push of these gradients fits in one message of `maxMessageBytes` (else it streams). */
export function fitsOneMessage(
  grads: readonly Tensor[],
  sparse: readonly SparseGrad[],
  maxMessageBytes: number,
): boolean {
  const bytes =
    grads.reduce((total, g) => total + (g.content as Uint8Array).byteLength, 0) +
    sparse.reduce((total, s) => total + sparseBytes(s), 0);
  return bytes + 64 * (grads.length + sparse.length) + 1024 < maxMessageBytes;
}

function sparseBytes(rows: SparseGrad): number {
  const size = (b: SparseGrad['ids']): number => (b ? (b as Uint8Array).byteLength : 0);
  return size(rows.ids) + size(rows.grads) + size(rows.counts);
}

/**
 * A table's row gradients in slices of whole rows (ids, their gradient rows and counts together)
 * of about `chunkBytes` each: the pserver concatenates a table's slices (SendGradsChunk.sparse).
 */
export function* rowSlices(rows: SparseGrad, chunkBytes: number): Iterable<SparseGrad> {
  const ids = rows.ids as Uint8Array;
  const grads = rows.grads as Uint8Array;
  const counts = rows.counts as Uint8Array | undefined;
  const n = ids.byteLength / 8;
  if (n === 0) {
    yield rows;
    return;
  }
  const rowBytes = grads.byteLength / n;
  const perRow = 8 + rowBytes + (counts && counts.byteLength > 0 ? 4 : 0);
  const step = Math.max(1, Math.floor(chunkBytes / perRow));
  for (let start = 0; start < n; start += step) {
    const end = Math.min(n, start + step);
    yield {
      table: rows.table,
      ids: ids.subarray(start * 8, end * 8),
      grads: grads.subarray(start * rowBytes, end * rowBytes),
      ...(counts && counts.byteLength > 0 ? { counts: counts.subarray(start * 4, end * 4) } : {}),
    };
  }
}

/**
 * The messages of a streamed push: each dense gradient in pieces of `chunk` bytes (the shape on
 * its first), then each table's rows in slices of whole rows; the context on the first message.
 */
export function* pushPieces(
  context: RequestContext,
  grads: Tensor[],
  sparse: readonly SparseGrad[],
  chunk: number,
  sampleCount?: number,
): Iterable<SendGradsChunk> {
  let first = true;
  const counted = sampleCount === undefined ? {} : { sampleCount };
  for (const grad of grads) {
    const content = grad.content as Uint8Array;
    for (let offset = 0; offset < content.byteLength || offset === 0; offset += chunk) {
      yield {
        ...(first && { context, ...counted }),
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
  for (const rows of sparse) {
    for (const slice of rowSlices(rows, chunk)) {
      yield { ...(first && { context, ...counted }), grads: [], sparse: [slice] };
      first = false;
    }
  }
}
