import { OptimizerError } from '@pserver/optimizer';
import {
  invalidNameReason,
  shardOf,
  type FinishInitParamsRequest__Output,
  type GetRowsRequest__Output,
  type GetRowsResponse,
  type InitTableRequest__Output,
  type InitTableResponse,
  type SparseGrad__Output,
  type FinishInitParamsResponse,
  type GetParamsRequest__Output,
  type GetParamsResponse,
  type ListParamsRequest__Output,
  type ListParamsResponse,
  type GetShardStatusRequest__Output,
  type GetShardStatusResponse,
  type CheckpointMeta,
  type InitParamRequest__Output,
  type InitParamResponse,
  type SaveCheckpointResponse,
  type RequestContext__Output,
  type GradientChunk__Output,
  type SendGradsChunk__Output,
  type SendGradsRequest__Output,
  type SendGradsResponse,
} from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import type { FramePlace, CheckpointMeta as StoredMeta } from '@pserver/checkpoint';
import {
  asynchronous,
  consistencyMessage,
  TenureLostError,
  type JobConsistency,
  type ShardTenure,
} from '@pserver/coordination';
import { evictionsOf, type ForwardedPush } from '../replication/forwarded-push';
import type { AdmissionControl } from '../shard/admission';
import { noRoster, type Roster } from '../consistency/roster';
import {
  ShardConsistency,
  type ClosedStep,
  type Contributed,
  type LostContributions,
} from '../consistency/shard-consistency';
import { checkEpoch } from './epoch-guard';
import { PserverError } from '../shard/errors';
import type { Shard } from '../shard/shard';
import { StagedPush } from '../shard/staged-push';
import { StoredTensor } from '../shard/stored-tensor';
import { checkTableSpec, createShardTable, tableError } from '../shard/table-spec';
import { elementCount, elementTypeOf } from '../shard/tensor-bytes';

/** What the service needs of the checkpointer (a fake in unit tests). */
export interface CheckpointSaver {
  readonly lastCommitted: StoredMeta | undefined;
  save(reason: string): Promise<StoredMeta>;
}

export interface ParameterServiceOptions {
  shard: Shard;
  /**
   * Whether this pserver may act on the shard, and its epoch. Required synchronously before every
   * change and before every GetParams reply leaves; when it ends, calls waiting for
   * initialization are answered PSERVER_FENCED at once.
   */
  tenure: ShardTenure;
  admission: AdmissionControl;
  checkpointer: CheckpointSaver;
  /** For uptime; `performance.now()` at start. */
  startedAtMs?: number;
  /** The job's consistency mode (default ASYNC). */
  consistency?: JobConsistency;
  /** SYNC and SSP: the trainers a step counts. */
  roster?: Roster;
  /** Called for each push acknowledged as a duplicate (metrics). */
  onDuplicatePush?: () => void;
  /** Called when a SYNC step closes without contributions a crash of this shard lost (logs). */
  onLostContributions?: (lost: LostContributions) => void;
  /**
   * The largest reply the server may send (its gRPC max send message size, `--max-message-mb`).
   * A GetParams reply above it is refused PSERVER_REPLY_TOO_LARGE before it is built. Default:
   * no limit.
   */
  maxReplyBytes?: number;
  /**
   * The shard's replicas (a primary with replicas): `replicate` forwards a push just applied, as
   * the `seq`-th, and resolves once every replica in sync applied it; `replicated` resolves once
   * they applied everything applied so far. A push is acknowledged only after that.
   */
  replication?: {
    replicate(seq: number, push: ForwardedPush): Promise<void>;
    replicated(): Promise<void>;
    /** Each replica's progress, for GetShardStatus. */
    replicas(): { member: string; acked: number; inSync: boolean }[];
  };
}

/**
 * The `ParameterServer` service without gRPC: each method takes the decoded request and a call
 * context, returns the reply, and throws typed errors (PserverError, OptimizerError) that the
 * transport maps to statuses. Every check runs before the first change, so a refused call
 * changes nothing.
 */
export class ParameterService {
  private readonly shard: Shard;
  private readonly tenure: ShardTenure;
  private readonly admission: AdmissionControl;
  private readonly startedAtMs: number;
  /** What pushes do and when reads may go, per the job's consistency mode. */
  readonly consistency: ShardConsistency;
  private shuttingDown = false;
  /** FinishInitParams while its checkpoint is being committed. */
  private finishing: Promise<FinishInitParamsResponse> | undefined;

  constructor(private readonly options: ParameterServiceOptions) {
    this.shard = options.shard;
    this.tenure = options.tenure;
    this.admission = options.admission;
    this.startedAtMs = options.startedAtMs ?? performance.now();
    this.consistency = new ShardConsistency(
      options.consistency ?? asynchronous,
      options.roster ?? noRoster,
      this.shard,
      {
        onLost: options.onLostContributions,
        onClosed: options.replication && ((closed) => this.replicateStep(closed)),
      },
    );
    this.tenure.onLost((err) => {
      this.shard.abandonWaiters(err);
      this.consistency.abandon(err);
    });
  }

  /** From now on, changes are refused with UNAVAILABLE and waits (initialization, steps) end. */
  beginShutdown(): void {
    this.shuttingDown = true;
    this.shard.abandonWaiters(shuttingDownError());
    this.consistency.abandon(shuttingDownError());
  }

  async initParam(
    request: InitParamRequest__Output,
    _ctx: CallContext,
  ): Promise<InitParamResponse> {
    this.refuseIfShuttingDown();
    await this.checkEpoch(request.context);
    // Bad input is refused as such in every lifecycle state, so a misconfigured trainer learns
    // it also after another one initialized the shard.
    const param = request.param;
    if (!param) throw new PserverError('PSERVER_INVALID_ARGUMENT', 'param: required');
    const name = this.checkName(param.name, 'param.name');
    const base = name.split('@')[0]!;
    if (this.shard.tables.has(base))
      throw new PserverError('PSERVER_DUPLICATE_NAME', `param.name: ${name}: ${base} is a table`);
    const elementType = elementTypeOf(param.elementType, `param ${name}: elementType`);
    const elements = elementCount(param.content.byteLength, elementType, `param ${name}: content`);
    const shape = param.shape;
    const inexact = shape.find((d) => !Number.isSafeInteger(d));
    if (inexact !== undefined) throw beyondSafeInteger(`param ${name}: shape`, inexact);
    if (shape.length > 0) {
      const product = shape.reduce((a, b) => a * b, 1);
      const isBlock = name.includes('@');
      if (isBlock ? product < elements : product !== elements) {
        throw new PserverError(
          'PSERVER_LENGTH_MISMATCH',
          `param ${name}: shape [${shape.join(', ')}] holds ${product} elements, content has ${elements}`,
        );
      }
    }
    try {
      StoredTensor.checkConfig(name, elementType, request.optimizer);
    } catch (err) {
      if (err instanceof OptimizerError) err.message = `param ${name}: ${err.message}`;
      throw err;
    }
    // Not while FinishInitParams commits: the tensor would be in the shard but maybe not in the
    // checkpoint. After it: "already initialized", or, if its checkpoint failed, as before it.
    while (this.finishing) await this.finishing.catch(() => undefined);
    if (this.shard.initialized) throw alreadyInitialized();
    let tensor: StoredTensor;
    try {
      tensor = StoredTensor.create({
        name,
        elementType,
        shape,
        content: param.content,
        config: request.optimizer,
        memory: this.shard.memory,
      });
    } catch (err) {
      if (err instanceof OptimizerError) err.message = `param ${name}: ${err.message}`;
      throw err;
    }
    this.shard.put(tensor);
    return { shardEpoch: this.tenure.epoch };
  }

  /**
   * Creates (or, before FinishInitParams, replaces) this shard's part of a sparse table: its
   * buckets, empty. Like InitParam: bad specs are refused in every lifecycle state, and after
   * initialization the call answers PSERVER_ALREADY_INITIALIZED.
   */
  async initTable(
    request: InitTableRequest__Output,
    _ctx: CallContext,
  ): Promise<InitTableResponse> {
    this.refuseIfShuttingDown();
    await this.checkEpoch(request.context);
    const checked = checkTableSpec(request.spec);
    const name = checked.options.name;
    for (const tensor of this.shard.tensors.keys()) {
      if (tensor === name || tensor.startsWith(`${name}@`))
        throw new PserverError(
          'PSERVER_DUPLICATE_NAME',
          `spec.name: ${name} is a tensor on this shard`,
        );
    }
    while (this.finishing) await this.finishing.catch(() => undefined);
    if (this.shard.initialized) throw alreadyInitialized();
    let table;
    try {
      table = createShardTable(checked, this.shard.index, this.shard.shardCount);
    } catch (err) {
      throw tableError(err);
    }
    this.shard.putTable(table);
    return { shardEpoch: this.tenure.epoch };
  }

  /** Reads rows of a table; never creates one (a missing id reads its init value or zeros). */
  async getRows(request: GetRowsRequest__Output, ctx: CallContext): Promise<GetRowsResponse> {
    await this.checkEpoch(request.context);
    await this.whenInitialized('GetRows', ctx);
    // Rows are read under the mode's rule as tensors are (SYNC: the step before closed; SSP: within
    // the staleness bound).
    await this.beforeRead(request.context, ctx, 'GetRows');
    const table = this.shard.tables.get(request.table);
    if (!table)
      throw new PserverError(
        'PSERVER_UNKNOWN_TENSOR',
        `table: no table ${JSON.stringify(request.table.slice(0, 100))} on this shard`,
      );
    const limit = this.options.maxReplyBytes;
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
    this.tenure.require();
    return {
      shardEpoch: this.tenure.epoch,
      values: Buffer.from(rows.values.buffer, rows.values.byteOffset, rows.values.byteLength),
      found: Buffer.from(rows.found.buffer, rows.found.byteOffset, rows.found.byteLength),
    };
  }

  /**
   * Commits a checkpoint of the initial values, then marks the shard initialized and answers: an
   * initialized shard always has a committed checkpoint, so a pserver that dies right after this
   * answer (or the spare taking its index) restores the initial values instead of serving an
   * empty shard that trainers would wait on. A failed checkpoint fails the call with its error
   * (a full disk: RESOURCE_EXHAUSTED) and leaves the shard uninitialized, so a retry works. A
   * call while one commits (a retry after a client deadline) gets that one's answer; a call after
   * success gets PSERVER_ALREADY_INITIALIZED, which initializing clients treat as success.
   */
  async finishInitParams(
    request: FinishInitParamsRequest__Output,
    _ctx: CallContext,
  ): Promise<FinishInitParamsResponse> {
    this.refuseIfShuttingDown();
    await this.checkEpoch(request.context);
    if (this.finishing) return this.finishing;
    if (this.shard.initialized) throw alreadyInitialized();
    // Deliberately not cancelled with the call: a committed checkpoint is kept either way.
    const finishing = this.options.checkpointer.save('initialized').then(() => {
      this.shard.markInitialized();
      return { shardEpoch: this.tenure.epoch };
    });
    this.finishing = finishing;
    try {
      return await finishing;
    } finally {
      this.finishing = undefined;
    }
  }

  /**
   * Applies one push. `push` is where its gradients are staged: the data path passes the one it
   * placed the bytes in as they arrived (`StagedPush.placeFor`); it is this call's from then on,
   * discarded when the call ends.
   */
  async sendGrads(
    request: SendGradsRequest__Output,
    ctx: CallContext,
    push: StagedPush = this.newPush(),
  ): Promise<SendGradsResponse> {
    try {
      const { trainerId, step } = await this.checkPushContext(request.context);
      await this.beforePush(trainerId, step, ctx);
      const weight = checkSampleCount(
        request.sampleCount,
        request.grads.length + request.sparse.length,
      );
      const settled = this.settledBefore(trainerId, step);
      if (settled) return await this.acknowledged(settled);
      push.admit(
        request.grads.reduce((total, g) => total + g.content.byteLength, 0) +
          sparseBytes(request.sparse),
      );
      for (const sparse of request.sparse)
        push.addSparse(sparse.table, sparse.ids, sparse.grads, sparse.counts);
      for (const grad of request.grads) {
        const name = this.checkName(grad.name, 'grads.name');
        push.add(
          name,
          elementTypeOf(grad.elementType, `gradient ${name}: elementType`),
          0,
          grad.content,
          grad.shape,
          true,
        );
      }
      if (this.consistency.config.mode === 'sync')
        return this.contributed(this.contribute(trainerId, step, weight, push));
      const forwarded = this.forwardOf(trainerId, step, request.grads, request.sparse, true);
      const result = this.applyPush(trainerId, step, push);
      if (forwarded) forwarded.evictions = evictionsOf(result);
      return await this.acknowledged(this.reply(result), forwarded);
    } finally {
      push.discard();
    }
  }

  /** A streamed push; `push` as for `sendGrads`. */
  async sendGradsStream(
    chunks: AsyncIterable<SendGradsChunk__Output>,
    ctx: CallContext,
    push: StagedPush = this.newPush(),
  ): Promise<SendGradsResponse> {
    let context: { trainerId: number; step: number } | undefined;
    let settled: SendGradsResponse | undefined;
    let sampleCount: number | undefined;
    let admitted = 0;
    const grads: GradientChunk__Output[] = [];
    const sparse: SparseGrad__Output[] = [];
    try {
      for await (const chunk of chunks) {
        if (!context) {
          context = await this.checkPushContext(chunk.context);
          await this.beforePush(context.trainerId, context.step, ctx);
          sampleCount = chunk.sampleCount;
          settled = this.settledBefore(context.trainerId, context.step);
        }
        // A duplicate's (or late push's) pieces are read and dropped: it will not be applied.
        if (settled) continue;
        this.refuseIfShuttingDown();
        admitted +=
          chunk.grads.reduce((total, g) => total + g.content.byteLength, 0) +
          sparseBytes(chunk.sparse);
        push.admit(admitted);
        for (const slice of chunk.sparse)
          push.addSparse(slice.table, slice.ids, slice.grads, slice.counts);
        sparse.push(...chunk.sparse);
        grads.push(...chunk.grads);
        for (const piece of chunk.grads) {
          const name = this.checkName(piece.name, 'grads.name');
          push.add(
            name,
            elementTypeOf(piece.elementType, `gradient ${name}: elementType`),
            piece.offset,
            piece.content,
            // The shape travels with the first piece; later pieces' shapes are not read.
            piece.offset === 0 ? piece.shape : [],
            false,
          );
        }
      }
      ctx.signal.throwIfAborted();
      if (!context)
        throw new PserverError(
          'PSERVER_INVALID_STREAM',
          'SendGradsStream: the stream ended without a message',
        );
      if (settled) return await this.acknowledged(settled);
      const weight = checkSampleCount(sampleCount, push.empty ? 0 : 1);
      const { trainerId, step } = context;
      if (this.consistency.config.mode === 'sync')
        return this.contributed(this.contribute(trainerId, step, weight, push));
      const forwarded = this.forwardOf(trainerId, step, grads, sparse, false);
      const result = this.applyPush(trainerId, step, push);
      if (forwarded) forwarded.evictions = evictionsOf(result);
      return await this.acknowledged(this.reply(result), forwarded);
    } finally {
      push.discard();
    }
  }

  /**
   * The named tensors' values, each copied by `copy` in the same tick (a reply never mixes one
   * update's bytes with another's): into fresh Buffers by default; the data path copies into
   * buffers it reuses once the reply is written.
   */
  async getParams(
    request: GetParamsRequest__Output,
    ctx: CallContext,
    copy: (bytes: Uint8Array) => Uint8Array = copyToBuffer,
  ): Promise<GetParamsResponse> {
    await this.checkEpoch(request.context);
    if (request.names.length === 0)
      throw new PserverError('PSERVER_INVALID_ARGUMENT', 'names: empty');
    const seen = new Set<string>();
    for (const raw of request.names) {
      const name = this.checkName(raw, 'names');
      if (seen.has(name))
        throw new PserverError('PSERVER_DUPLICATE_NAME', `names: ${name} appears more than once`);
      seen.add(name);
    }
    await this.whenInitialized('GetParams', ctx);
    await this.beforeRead(request.context, ctx, 'GetParams');
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
    this.tenure.require();
    return {
      shardEpoch: this.tenure.epoch,
      params,
      version: this.consistency.version,
      minClock: this.consistency.clock,
    };
  }

  /**
   * SYNC and SSP: the trainer must be in the roster. SYNC: parks a push for a step after the open
   * one until the steps before close (deadline-bound).
   */
  private async beforePush(trainerId: number, step: number, ctx: CallContext): Promise<void> {
    if (this.consistency.config.mode === 'async') return;
    await this.consistency.requireMember(trainerId, 'SendGrads');
    if (this.consistency.config.mode !== 'sync') return;
    this.refuseIfShuttingDown();
    try {
      await this.consistency.beforePush(trainerId, step, ctx.signal);
    } catch (err) {
      if (err instanceof PserverError || err instanceof TenureLostError) throw err;
      throw Date.now() >= ctx.deadline
        ? new PserverError(
            'DEADLINE_EXCEEDED',
            `SendGrads for step ${step}: waited for step ${step - 1} to close until the deadline (the shard closed ${this.consistency.clock})`,
          )
        : new PserverError(
            'CANCELLED',
            `SendGrads for step ${step}: cancelled while waiting for step ${step - 1} to close`,
          );
    }
  }

  /**
   * Parks a read until the job's consistency mode lets it go (`ShardConsistency.beforeRead`), up
   * to the call's deadline; the values are copied right after, in the same tick.
   */
  private async beforeRead(
    context: RequestContext__Output | null,
    ctx: CallContext,
    what: 'GetParams' | 'GetRows',
  ): Promise<void> {
    const step = context?.step ?? 0;
    if (!Number.isSafeInteger(step))
      throw beyondSafeInteger('context.step', step, 'PSERVER_INVALID_CONTEXT');
    // A wait begun after shutdown began (or the tenure ended) would never be abandoned.
    if (this.consistency.config.mode !== 'async') this.refuseIfShuttingDown();
    try {
      await this.consistency.beforeRead(context?.trainerId ?? 0, step, ctx.signal, what);
    } catch (err) {
      if (err instanceof PserverError || err instanceof TenureLostError) throw err;
      const waitedFor =
        this.consistency.config.mode === 'sync'
          ? `step ${step - 1} to close`
          : `every trainer of the roster to reach step ${step - 1 - (this.consistency.config.mode === 'ssp' ? this.consistency.config.staleness : 0)}`;
      throw Date.now() >= ctx.deadline
        ? new PserverError(
            'DEADLINE_EXCEEDED',
            `${what} for step ${step}: waited for ${waitedFor} until the deadline (the shard is at ${this.consistency.clock})`,
          )
        : new PserverError(
            'CANCELLED',
            `${what} for step ${step}: cancelled while waiting for ${waitedFor}`,
          );
    }
  }

  /** The tensors and blocks held, as InitParam created them, so a reader can attach. */
  async listParams(
    request: ListParamsRequest__Output,
    ctx: CallContext,
  ): Promise<ListParamsResponse> {
    await this.checkEpoch(request.context);
    await this.whenInitialized('ListParams', ctx);
    const params = [...this.shard.tensors.values()].map((t) => ({
      name: t.name,
      elementType: t.elementType,
      shape: [...t.shape],
      elements: t.elements,
      optimizer: t.config,
    }));
    const tables = [...this.shard.tables.values()].map((t) => t.spec);
    this.tenure.require();
    return { shardEpoch: this.tenure.epoch, params, tables };
  }

  /**
   * Refuses a GetParams reply that grpc-js would not send: above the send limit it fails the call
   * with RESOURCE_EXHAUSTED, which clients take for a transient overload and retry forever. The
   * size is an upper bound of the encoded reply (every varint at its longest), so a reply within
   * a few dozen bytes of the limit is refused too.
   */
  private checkReplySize(tensors: readonly StoredTensor[]): void {
    const limit = this.options.maxReplyBytes;
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

  /** Waits until the shard is initialized, up to the call's deadline. */
  private async whenInitialized(method: string, ctx: CallContext): Promise<void> {
    if (this.shard.initialized) return;
    // A wait begun after shutdown began would never be abandoned.
    this.refuseIfShuttingDown();
    try {
      await this.shard.whenInitialized(ctx.signal);
    } catch (err) {
      if (err instanceof PserverError || err instanceof TenureLostError) throw err;
      throw Date.now() >= ctx.deadline
        ? new PserverError(
            'DEADLINE_EXCEEDED',
            `${method}: the shard was not initialized before the deadline`,
          )
        : new PserverError('CANCELLED', `${method}: cancelled while waiting for initialization`);
    }
  }

  /** Writes and commits a checkpoint now; answers its meta. */
  async saveCheckpoint(): Promise<SaveCheckpointResponse> {
    if (!this.shard.initialized) {
      throw new PserverError(
        'PSERVER_NOT_INITIALIZED',
        'SaveCheckpoint: the shard is not initialized yet (FinishInitParams)',
      );
    }
    return { meta: toProtoMeta(await this.options.checkpointer.save('request')) };
  }

  getShardStatus(request?: GetShardStatusRequest__Output): GetShardStatusResponse {
    const trainerId = request?.context?.trainerId ?? 0;
    const tensors = [...this.shard.tensors.values()].map((t) => ({
      name: t.name,
      elementType: t.elementType,
      shape: [...t.shape],
      elements: t.elements,
      bytes: t.byteLength,
      updates: t.updates,
      optimizer: t.algorithm,
    }));
    return {
      index: this.shard.index,
      shardCount: this.shard.shardCount,
      shardEpoch: this.tenure.epoch,
      mode: this.tenure.mode === 'cluster' ? 'SHARD_MODE_CLUSTER' : 'SHARD_MODE_STANDALONE',
      initialized: this.shard.initialized,
      tensors,
      totalBytes: this.shard.totalBytes,
      updatesApplied: this.shard.updatesApplied,
      uptimeMs: Math.round(performance.now() - this.startedAtMs),
      trainers: this.shard.marks.size,
      pushBytesInFlight: this.admission.inFlight,
      tables: [...this.shard.tables.values()].map(({ table }) => ({
        name: table.name,
        dim: table.dim,
        rows: table.rows,
        bytesPerRow: table.bytesPerRow,
        step: table.step,
        ...table.totals,
        optimizer: rowAlgorithmName(table.optimizer.config.rule.kind),
      })),
      lastCheckpoint: this.options.checkpointer.lastCommitted
        ? toProtoMeta(this.options.checkpointer.lastCommitted)
        : null,
      consistency: consistencyMessage(this.consistency.config),
      version: this.consistency.version,
      minClock: this.consistency.clock,
      roster: [...this.consistency.roster],
      trainerLastStep: trainerId === 0 ? 0 : this.consistency.lastStep(trainerId),
      ...(this.options.replication && {
        appliedSeq: this.shard.appliedSeq,
        replicas: this.options.replication.replicas().map(({ member, acked, inSync }) => ({
          member,
          ackedSeq: acked,
          inSync,
        })),
      }),
    };
  }

  private reply(result: ReturnType<Shard['applyPush']>): SendGradsResponse {
    // A retry that arrived while the first send was being applied is caught by the shard.
    if (result.outcome === 'PUSH_OUTCOME_DUPLICATE') this.options.onDuplicatePush?.();
    const { outcome, skippedNonFinite, lastAppliedStep, sparse } = result;
    this.consistency.applied();
    return {
      shardEpoch: this.tenure.epoch,
      outcome,
      skippedNonFinite,
      lastAppliedStep,
      sparse,
      version: this.consistency.version,
    };
  }

  /** SYNC: the push joins the open step (the tenure required right before, no await between). */
  private contribute(
    trainerId: number,
    step: number,
    weight: number,
    push: StagedPush,
  ): Contributed {
    this.tenure.require();
    return this.consistency.contribute(trainerId, step, weight, push);
  }

  private contributed({ outcome, skippedNonFinite, lastStep }: Contributed): SendGradsResponse {
    if (outcome === 'PUSH_OUTCOME_DUPLICATE') this.options.onDuplicatePush?.();
    return {
      shardEpoch: this.tenure.epoch,
      outcome,
      skippedNonFinite,
      lastAppliedStep: lastStep,
      sparse: [],
      version: this.consistency.version,
    };
  }

  /**
   * The reply once the shard's replicas hold what it acknowledges: an applied push once each
   * replica in sync applied it, a duplicate once they applied everything applied so far (the
   * first try may still be on its way to them). Without replicas, at once.
   */
  private async acknowledged(
    reply: SendGradsResponse,
    forwarded?: ForwardedPush,
  ): Promise<SendGradsResponse> {
    const replication = this.options.replication;
    if (!replication) return reply;
    if (reply.outcome === 'PUSH_OUTCOME_APPLIED' && forwarded) {
      forwarded.marks = this.consistency.takeMovedMarks();
      await replication.replicate(this.shard.appliedSeq, forwarded);
    } else await replication.replicated();
    // The tenure may have ended while the replicas answered: a deposed primary's ack is not one.
    this.tenure.require();
    return reply;
  }

  /**
   * SYNC with replicas: forwards a step just closed (its means, as pieces at offset 0) with the
   * marks moved before it; resolves once every replica in sync applied it.
   */
  private replicateStep(closed: ClosedStep): Promise<void> {
    return this.options.replication!.replicate(this.shard.appliedSeq, {
      trainerId: 0,
      step: closed.step,
      grads: closed.means.map(({ tensor, content }) => ({
        name: tensor.name,
        elementType: tensor.elementType,
        offset: 0,
        content,
        shape: [...tensor.shape],
      })),
      sparse: closed.tables.map(({ table, ids, grads, counts }) => ({
        table: table.table.name,
        ids: Buffer.from(ids),
        grads: Buffer.from(grads),
        counts: Buffer.from(counts),
      })),
      evictions: closed.evictions.map(({ table, ids }) => ({
        table,
        ids: Buffer.from(ids.buffer, ids.byteOffset, ids.byteLength),
      })),
      closedStep: { contributors: closed.contributors },
      marks: this.consistency.takeMovedMarks(),
    });
  }

  /** An empty push of this shard, under its admission cap. */
  newPush(): StagedPush {
    return new StagedPush(
      (name) => this.shard.tensors.get(name),
      (name) => this.shard.tables.get(name),
      this.admission,
    );
  }

  /**
   * What a primary forwards to its replicas once the push is applied, when it has replicas: the
   * pieces as received, their bytes copied (the data path received them into buffers this push
   * frees when it ends, and a forward may be sent again after that).
   */
  private forwardOf(
    trainerId: number,
    step: number,
    grads: readonly (Omit<GradientChunk__Output, 'offset'> & { offset?: number })[],
    sparse: readonly SparseGrad__Output[],
    whole: boolean,
  ): ForwardedPush | undefined {
    if (!this.options.replication) return undefined;
    return {
      trainerId,
      step,
      grads: grads.map((g) => ({
        name: g.name,
        elementType: g.elementType,
        offset: whole ? 0 : (g.offset ?? 0),
        content: Buffer.from(g.content),
        shape: g.shape,
      })),
      sparse: sparse.map((slice) => ({
        table: slice.table,
        ids: Buffer.from(slice.ids),
        grads: Buffer.from(slice.grads),
        counts: Buffer.from(slice.counts),
      })),
      evictions: [],
    };
  }

  /**
   * The answer to a push settled before its gradients are read: a duplicate (its step is not above
   * the trainer's mark) or, in SYNC, late (its step closed without it); undefined when it goes on.
   */
  private settledBefore(trainerId: number, step: number): SendGradsResponse | undefined {
    if (this.consistency.config.mode === 'sync') {
      const settled = this.consistency.classify(trainerId, step);
      return settled && this.contributed(settled);
    }
    const last = this.shard.marks.lastStep(trainerId);
    if (step > last) return undefined;
    this.options.onDuplicatePush?.();
    return {
      shardEpoch: this.tenure.epoch,
      outcome: 'PUSH_OUTCOME_DUPLICATE',
      skippedNonFinite: [],
      lastAppliedStep: last,
      sparse: [],
      version: this.consistency.version,
    };
  }

  private async checkPushContext(
    context: RequestContext__Output | null,
  ): Promise<{ trainerId: number; step: number }> {
    this.refuseIfShuttingDown();
    await this.checkEpoch(context);
    const trainerId = context?.trainerId ?? 0;
    const step = context?.step ?? 0;
    if (trainerId === 0)
      throw new PserverError(
        'PSERVER_INVALID_CONTEXT',
        'context.trainerId: required (non-zero) for a push',
      );
    if (!Number.isSafeInteger(trainerId))
      throw beyondSafeInteger('context.trainerId', trainerId, 'PSERVER_INVALID_CONTEXT');
    if (!Number.isSafeInteger(step))
      throw beyondSafeInteger('context.step', step, 'PSERVER_INVALID_CONTEXT');
    if (step < 1)
      throw new PserverError(
        'PSERVER_INVALID_CONTEXT',
        `context.step: must be ≥ 1 for a push, got ${step}`,
      );
    if (!this.shard.initialized) {
      throw new PserverError(
        'PSERVER_NOT_INITIALIZED',
        'SendGrads: the shard is not initialized yet (FinishInitParams)',
      );
    }
    return { trainerId, step };
  }

  private async checkEpoch(context: RequestContext__Output | null): Promise<void> {
    await checkEpoch(this.tenure, context?.shardEpoch ?? 0);
  }

  /** A valid tensor or block name placed on this shard. */
  private checkName(name: string, field: string): string {
    // A tensor the shard holds passed this check when it was created: a push's and a pull's
    // names mostly are such, and hashing each name again costs a small push a tenth of its time.
    if (this.shard.tensors.has(name)) return name;
    const reason = invalidNameReason(name);
    if (reason)
      throw new PserverError(
        'PSERVER_INVALID_NAME',
        `${field}: ${JSON.stringify(name.slice(0, 100))} ${reason}`,
      );
    const { index, shardCount } = this.shard;
    const shard = shardOf(name, shardCount);
    if (shard !== index) {
      throw new PserverError(
        'PSERVER_WRONG_SHARD',
        `${field}: ${name} is placed on shard ${shard} of ${shardCount}, this is shard ${index}`,
      );
    }
    return name;
  }

  private refuseIfShuttingDown(): void {
    this.tenure.require();
    if (this.shuttingDown) throw shuttingDownError();
  }

  /** Applies a push: the tenure is required again right before, with no await in between. */
  private applyPush(
    trainerId: number,
    step: number,
    push: StagedPush,
  ): ReturnType<Shard['applyPush']> {
    this.tenure.require();
    return this.shard.applyPush(trainerId, step, push);
  }
}

/**
 * uint64 fields arrive as JS numbers (the loader's `longs: Number`), exact only up to 2^53 − 1.
 * Beyond, distinct values round to one (two trainers would share step marks) and the rounded
 * value is what replies and checkpoints carry back (a step of 2^64 − 1 would be stored as 0), so
 * such values are refused rather than stored wrong.
 */
function beyondSafeInteger(
  field: string,
  value: number,
  code: 'PSERVER_INVALID_ARGUMENT' | 'PSERVER_INVALID_CONTEXT' = 'PSERVER_INVALID_ARGUMENT',
): PserverError {
  return new PserverError(
    code,
    `${field}: must be at most 2^53 − 1 (larger values are not kept exactly), got ${value}`,
  );
}

/**
 * A push's weight: its sample count, 1 when unset. 0 (a step without data) must come without
 * gradients, and a push without gradients must say 0.
 */
function checkSampleCount(sampleCount: number | undefined, gradients: number): number {
  const weight = sampleCount ?? 1;
  if (!Number.isSafeInteger(weight)) throw beyondSafeInteger('sampleCount', weight);
  if (weight === 0 && gradients > 0)
    throw new PserverError(
      'PSERVER_INVALID_ARGUMENT',
      'sampleCount: 0 (a step without data) with gradients: send none, or the count they came from',
    );
  if (weight > 0 && gradients === 0)
    throw new PserverError(
      'PSERVER_INVALID_ARGUMENT',
      'grads: empty push (a step without data says sampleCount 0)',
    );
  return weight;
}

function copyToBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes);
}

function sparseBytes(sparse: readonly SparseGrad__Output[]): number {
  return sparse.reduce(
    (total, g) => total + g.ids.byteLength + g.grads.byteLength + g.counts.byteLength,
    0,
  );
}

/** A row rule's name in GetShardStatus. */
function rowAlgorithmName(kind: string): string {
  return kind === 'rowwiseAdagrad' ? 'rowwise_adagrad' : kind;
}

function alreadyInitialized(): PserverError {
  return new PserverError('PSERVER_ALREADY_INITIALIZED', 'the shard is already initialized');
}

function shuttingDownError(): PserverError {
  return new PserverError('PSERVER_SHUTTING_DOWN', 'the pserver is shutting down');
}

function toProtoMeta(meta: StoredMeta): CheckpointMeta {
  const bytes = (hex: string): Buffer => Buffer.from(hex, 'hex');
  const place = (at: FramePlace | undefined) => at && { ...at, checksum: bytes(at.checksum) };
  return {
    ...meta,
    checksum: bytes(meta.checksum),
    indexPlace: place(meta.indexPlace),
    chain: meta.chain.map((file) => ({
      ...file,
      checksum: bytes(file.checksum),
      indexPlace: place(file.indexPlace),
    })),
  };
}
