import { createHash } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import type { PserverProcess } from '@pserver/local-cluster';
import { waitFor } from '@pserver/local-cluster';
import { checkHealth, serviceNames } from '@pserver/rpc';
import type { FuzzSubject, Sent } from './fuzz-rpc';
import { RawGrpcClient } from './raw-client';
import { idBytes, idsOf } from './pserver-requests';
import { decodeMessage, encodeMessage } from './wire';

/**
 * Everything of a shard a call may change: GetShardStatus (counters, tensors, tables, trainers,
 * the last checkpoint; not the uptime) and, once initialized, a digest of every tensor's bytes,
 * shape and type as GetParams returns them, and of each table's rows as GetRows returns them for
 * every id the subject knows of (those it was told to watch, and those of accepted pushes).
 */
export interface PserverState {
  status: Record<string, unknown>;
  params: Record<string, string>;
  rows: Record<string, string>;
}

const sha256 = (bytes: Uint8Array | string): string =>
  createHash('sha256').update(bytes).digest('hex');

/** A shape as text; a long one (a tensor of thousands of dimensions) as its rank and digest. */
function shapeText(shape: string[]): string {
  return shape.length <= 16
    ? `[${shape.join(',')}]`
    : `[${shape.length} dims, sha256 ${sha256(shape.join(','))}]`;
}

/** The tensors a shard holds, as GetShardStatus lists them, and its epoch. */
interface Layout {
  epoch: bigint;
  tensors: { name: string; bytes: string; shape: string[] }[];
}

const sameLayout = (a: Layout, b: Layout): boolean =>
  a.epoch === b.epoch &&
  a.tensors.length === b.tensors.length &&
  a.tensors.every((t, i) => t.name === b.tensors[i]!.name && t.bytes === b.tensors[i]!.bytes);

/** A pserver process under fuzzing: its state, read over a raw client, and its liveness. */
export class PserverFuzzSubject implements FuzzSubject<PserverState> {
  readonly service = serviceNames.parameterServer;
  readonly client: RawGrpcClient;
  /**
   * What InitParam calls were accepted with, by name, as `params` of a snapshot shows it (type,
   * shape, digest of the content): before initialization GetParams waits, so the tensors are
   * compared once the shard is initialized.
   */
  readonly initialContents = new Map<string, string>();
  /** The tensors and epoch the last snapshot found, once initialized. */
  private layout: Layout | undefined;
  /** The bytes the last full snapshot read, repeated by quick ones. */
  private lastParams: Record<string, string> | undefined;
  private lastRows: Record<string, string> = {};
  /** By table, the ids whose rows a full snapshot reads. */
  private readonly rowIds = new Map<string, Set<bigint>>();

  constructor(
    readonly pserver: PserverProcess,
    readonly maxMessageBytes: number,
  ) {
    this.client = new RawGrpcClient(pserver.address);
  }

  /**
   * The shard's state. A `quick` one reads GetShardStatus only and repeats the bytes of the last
   * full one: the counters, names, sizes and shapes are checked, the bytes at the next full one.
   */
  async snapshot(level: 'quick' | 'full' = 'full'): Promise<PserverState> {
    // Both reads at once, the tensors read by the names the last snapshot found; read again
    // when the names or sizes changed (after an accepted call, or a bug).
    const known = this.layout;
    const quick = level === 'quick' && this.lastParams !== undefined;
    const [shard, early] = await Promise.all([
      this.settledStatus(),
      known && !quick ? this.params(known) : undefined,
    ]);
    // Everything but the uptime, which moves on its own.
    const rest = Object.fromEntries(
      Object.entries(shard).filter(([key]) => key !== 'uptimeMs' && key !== 'tensors'),
    );
    const listed = shard.tensors;
    const layout: Layout = {
      epoch: BigInt(shard.shardEpoch as string),
      tensors: listed as Layout['tensors'],
    };
    const params = !shard.initialized
      ? {}
      : quick
        ? this.lastParams!
        : early && sameLayout(known!, layout)
          ? early
          : await this.params(layout);
    const rows = !shard.initialized ? {} : quick ? this.lastRows : await this.rows(layout.epoch);
    this.layout = shard.initialized ? layout : undefined;
    this.lastParams = params;
    this.lastRows = rows;
    const tensors = layout.tensors.map((t) => ({ ...t, shape: shapeText(t.shape) }));
    return { status: { ...rest, tensors }, params, rows };
  }

  /** Has full snapshots read the rows of `ids` of `table` too. */
  watchRows(table: string, ids: Iterable<bigint>): void {
    const known = this.rowIds.get(table) ?? new Set<bigint>();
    for (const id of ids) known.add(id);
    this.rowIds.set(table, known);
  }

  /** A digest of each watched table's rows (values and found bits), read in batches. */
  private async rows(epoch: bigint): Promise<Record<string, string>> {
    const rows: Record<string, string> = {};
    for (const [table, known] of [...this.rowIds].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const ids = [...known].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const digest = createHash('sha256');
      for (let at = 0; at < ids.length; at += 4096) {
        const reply = await this.call('GetRows', 'GetRowsRequest', 'GetRowsResponse', {
          context: { shardEpoch: epoch },
          table,
          ids: idBytes(ids.slice(at, at + 4096)),
        });
        digest.update(reply.values as Uint8Array).update(reply.found as Uint8Array);
      }
      rows[table] = `${ids.length} ids, sha256 ${digest.digest('hex')}`;
    }
    return rows;
  }

  /** GetShardStatus once no push bytes are in flight (a stream broken off may be releasing). */
  private settledStatus(): Promise<Record<string, unknown>> {
    return waitFor(
      async () => {
        const s = await this.status();
        return s.pushBytesInFlight === '0' ? s : undefined;
      },
      { timeoutMs: 2_000, intervalMs: 5, description: 'no push bytes in flight' },
    ).catch(() => this.status());
  }

  /** Every tensor as GetParams returns it, in batches whose replies stay well under the limit. */
  private async params(layout: Layout): Promise<Record<string, string>> {
    const params: Record<string, string> = {};
    const batches: string[][] = [[]];
    let bytes = 0;
    for (const t of layout.tensors) {
      const size = Number(t.bytes) + t.shape.length * 11 + t.name.length * 3 + 64;
      if (bytes + size > this.maxMessageBytes / 2 && batches.at(-1)!.length > 0) {
        batches.push([]);
        bytes = 0;
      }
      batches.at(-1)!.push(t.name);
      bytes += size;
    }
    for (const names of batches.filter((b) => b.length > 0)) {
      const reply = await this.call('GetParams', 'GetParamsRequest', 'GetParamsResponse', {
        context: { shardEpoch: layout.epoch },
        names,
      });
      for (const p of reply.params as {
        name: string;
        content: Uint8Array;
        shape: string[];
        elementType: string;
      }[])
        params[p.name] = `${p.elementType} ${shapeText(p.shape)} ${sha256(p.content)}`;
    }
    return params;
  }

  /** The same process and state, for the calls of another of its services (Replication). */
  asService(service: string): FuzzSubject<PserverState> {
    return {
      service,
      client: this.client,
      maxMessageBytes: this.maxMessageBytes,
      snapshot: (level) => this.snapshot(level),
      checkAlive: () => this.checkAlive(),
    };
  }

  async checkAlive(): Promise<void> {
    if (!this.pserver.process.running)
      throw this.pserver.process.failure(
        `exited (${JSON.stringify(this.pserver.process.exitStatus)})`,
      );
    const health = await checkHealth(this.pserver.address, '');
    if (health !== 'SERVING') throw this.pserver.process.failure(`health ${health}`);
    await this.status();
  }

  async onAccepted(method: string, response: Record<string, unknown>, sent: Sent): Promise<void> {
    if (method === 'SendGrads' || method === 'SendGradsStream') {
      // A duplicate is acknowledged as it comes, its content unread: only an applied push wrote.
      if (response.outcome !== 'PUSH_OUTCOME_APPLIED') return;
      this.watchPushedRows(method === 'SendGrads' ? 'SendGradsRequest' : 'SendGradsChunk', sent);
      return;
    }
    if (method !== 'InitParam') return;
    // What the server parsed, read with the same parser.
    const request = decodeMessage('InitParamRequest', sent.messages[0]!);
    const param = request.param as {
      name: string;
      elementType: string;
      shape: string[];
      content: Uint8Array;
    } | null;
    if (param)
      this.initialContents.set(
        param.name,
        `${param.elementType} ${shapeText(param.shape)} ${sha256(param.content)}`,
      );
  }

  /** Watches the rows an accepted push wrote (it may have created rows of any id placed here). */
  private watchPushedRows(requestType: string, sent: Sent): void {
    for (const message of sent.messages) {
      const sparse = decodeMessage(requestType, message).sparse as {
        table: string;
        ids: Uint8Array;
      }[];
      for (const { table, ids } of sparse) this.watchRows(table, idsOf(ids));
    }
  }

  status(): Promise<Record<string, unknown>> {
    return this.call('GetShardStatus', 'GetShardStatusRequest', 'GetShardStatusResponse', {});
  }

  close(): void {
    this.client.close();
  }

  private async call(
    method: string,
    requestType: string,
    responseType: string,
    request: object,
  ): Promise<Record<string, unknown>> {
    const path = `/${this.service}/${method}`;
    const answer = await this.client.unary(path, encodeMessage(requestType, request));
    if (answer.status !== status.OK)
      throw new Error(
        `${method} for a snapshot failed: ${status[answer.status]} ${answer.details}`,
      );
    return decodeMessage(responseType, answer.body!);
  }
}
