import type {
  GetParamsRequest__Output,
  GetParamsResponse,
  GetRowsRequest__Output,
  GetRowsResponse,
  ListParamsRequest__Output,
  ListParamsResponse,
} from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import type { ShardConsistency } from '../consistency/shard-consistency';
import { PserverError } from '../shard/errors';
import type { Shard } from '../shard/shard';
import type { StoredTensor } from '../shard/stored-tensor';
import { tableError } from '../shard/table-spec';
import { readStep } from './request-checks';
import type { ShardAccess } from './shard-access';

/**
 * GetParams, GetRows and ListParams: reads wait for initialization and for the consistency mode's
 * clock, up to the call's deadline, then copy what they answer in one tick — a reply never mixes
 * one update's bytes with another's — and leave only while the tenure holds.
 */
export class ReadService {
  constructor(
    private readonly shard: Shard,
    private readonly access: ShardAccess,
    private readonly consistency: ShardConsistency,
    /**
     * The largest reply the server may send (its gRPC max send message size, `--max-message-mb`).
     * A reply above it is refused PSERVER_REPLY_TOO_LARGE before it is built. Default: no limit.
     */
    private readonly maxReplyBytes: number | undefined,
  ) {}

  /**
   * The named tensors' values, each copied by `copy` in the same tick: into fresh Buffers by
   * default; the data path copies into buffers it reuses once the reply is written.
   */
  async getParams(
    request: GetParamsRequest__Output,
    ctx: CallContext,
    copy: (bytes: Uint8Array) => Uint8Array = copyToBuffer,
  ): Promise<GetParamsResponse> {
    await this.access.checkEpoch(request.context);
    if (request.names.length === 0)
      throw new PserverError('PSERVER_INVALID_ARGUMENT', 'names: empty');
    const seen = new Set<string>();
    for (const raw of request.names) {
      const name = this.access.checkName(raw, 'names');
      if (seen.has(name))
        throw new PserverError('PSERVER_DUPLICATE_NAME', `names: ${name} appears more than once`);
      seen.add(name);
    }
    await this.access.whenInitialized('GetParams', ctx);
    await this.consistency.beforeRead(
      request.context?.trainerId ?? 0,
      readStep(request.context?.step),
      ctx,
      'GetParams',
    );
    const tensors = request.names.map((name) => {
      const tensor = this.shard.tensors.get(name);
      if (!tensor)
        throw new PserverError('PSERVER_UNKNOWN_TENSOR', `names: no tensor ${name} on this shard`);
      return tensor;
    });
    this.checkReplySize(tensors);
    const params = tensors.map((tensor) => ({
      name: tensor.name,
      elementType: tensor.elementType,
      shape: [...tensor.shape],
      content: copy(tensor.bytes()),
    }));
    this.access.require();
    return {
      shardEpoch: this.access.epoch,
      params,
      version: this.consistency.version,
      minClock: this.consistency.clock,
    };
  }

  /** Reads rows of a table; never creates one (a missing id reads its init value or zeros). */
  async getRows(request: GetRowsRequest__Output, ctx: CallContext): Promise<GetRowsResponse> {
    await this.access.checkEpoch(request.context);
    await this.access.whenInitialized('GetRows', ctx);
    // Rows are read under the mode's rule as tensors are (SYNC: the step before closed; SSP: within
    // the staleness bound).
    await this.consistency.beforeRead(
      request.context?.trainerId ?? 0,
      readStep(request.context?.step),
      ctx,
      'GetRows',
    );
    const table = this.shard.tables.get(request.table);
    if (!table)
      throw new PserverError(
        'PSERVER_UNKNOWN_TENSOR',
        `table: no table ${JSON.stringify(request.table.slice(0, 100))} on this shard`,
      );
    const limit = this.maxReplyBytes;
    const n = request.ids.byteLength / 8;
    if (limit !== undefined && n * table.table.dim * 4 + n / 8 + 32 > limit) {
      throw new PserverError(
        'PSERVER_REPLY_TOO_LARGE',
        `GetRows: ${Math.floor(n)} rows of dim ${table.table.dim} are above the server's message limit of ${limit} bytes (--max-message-mb): ask for fewer ids per call`,
      );
    }
    let rows;
    try {
      rows = table.table.getRows(request.ids);
    } catch (err) {
      throw tableError(err);
    }
    this.access.require();
    return {
      shardEpoch: this.access.epoch,
      values: Buffer.from(rows.values.buffer, rows.values.byteOffset, rows.values.byteLength),
      found: Buffer.from(rows.found.buffer, rows.found.byteOffset, rows.found.byteLength),
    };
  }

  /** The tensors and blocks held, as InitParam created them, so a reader can attach. */
  async listParams(
    request: ListParamsRequest__Output,
    ctx: CallContext,
  ): Promise<ListParamsResponse> {
    await this.access.checkEpoch(request.context);
    await this.access.whenInitialized('ListParams', ctx);
    const params = [...this.shard.tensors.values()].map((t) => ({
      name: t.name,
      elementType: t.elementType,
      shape: [...t.shape],
      elements: t.elements,
      optimizer: t.config,
    }));
    const tables = [...this.shard.tables.values()].map((t) => t.spec);
    this.access.require();
    return { shardEpoch: this.access.epoch, params, tables };
  }

  /**
   * Refuses a GetParams reply that grpc-js would not send: above the send limit it fails the call
   * with RESOURCE_EXHAUSTED, which clients take for a transient overload and retry forever. The
   * size is an upper bound of the encoded reply (every varint at its longest), so a reply within
   * a few dozen bytes of the limit is refused too.
   */
  private checkReplySize(tensors: readonly StoredTensor[]): void {
    const limit = this.maxReplyBytes;
    if (limit === undefined) return;
    let content = 0;
    let encoded = 11; // shard_epoch
    for (const t of tensors) {
      content += t.byteLength;
      // Tensor's tag and length, name, element type, packed shape, content.
      encoded += 6 + (6 + Buffer.byteLength(t.name)) + 2 + (6 + 10 * t.shape.length);
      encoded += 6 + t.byteLength;
    }
    if (encoded <= limit) return;
    throw new PserverError(
      'PSERVER_REPLY_TOO_LARGE',
      `GetParams: the reply would hold ${content} bytes of ${tensors.length} tensors (up to ${encoded} encoded), above the server's message limit of ${limit} bytes (--max-message-mb): ask for fewer tensors per call`,
    );
  }
}

function copyToBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes);
}
