import { asynchronous, type JobConsistency, type ShardTenure } from '@pserver/coordination';
import type {
  FinishInitParamsRequest__Output,
  FinishInitParamsResponse,
  GetParamsRequest__Output,
  GetParamsResponse,
  GetRowsRequest__Output,
  GetRowsResponse,
  GetShardStatusRequest__Output,
  GetShardStatusResponse,
  InitParamRequest__Output,
  InitParamResponse,
  InitTableRequest__Output,
  InitTableResponse,
  ListParamsRequest__Output,
  ListParamsResponse,
  SaveCheckpointResponse,
  SendGradsChunk__Output,
  SendGradsRequest__Output,
  SendGradsResponse,
} from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import { consistencyFor } from '../consistency/consistency';
import { noRoster, type Roster } from '../consistency/roster';
import type { LostContributions, ShardConsistency } from '../consistency/shard-consistency';
import type { AdmissionControl } from '../shard/admission';
import type { Shard } from '../shard/shard';
import { InitService, type CheckpointSaver } from './init-service';
import { PushService, type ShardReplication } from './push-service';
import type { PushStaging } from './push-staging';
import { ReadService } from './read-service';
import { ShardAccess, shuttingDownError } from './shard-access';
import { StatusService } from './status-service';

export type { CheckpointSaver, ShardReplication };

export interface ParameterServiceOptions {
  shard: Shard;
  /**
   * Whether this pserver may act on the shard, and its epoch. Required synchronously before every
   * change and before every reply leaves; when it ends, calls waiting for initialization or for
   * the consistency mode's clock are answered at once with its error.
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
   * A reply above it is refused PSERVER_REPLY_TOO_LARGE before it is built. Default: no limit.
   */
  maxReplyBytes?: number;
  /** The shard's replicas, when it is a primary with replicas. */
  replication?: ShardReplication;
}

/**
 * The `ParameterServer` service without gRPC, one shard's: each method takes the decoded request
 * and a call context, returns the reply, and throws typed errors (PserverError, OptimizerError)
 * that the transport maps to statuses. It is four services by what they answer — initialization
 * (`InitService`), pushes (`PushService`), reads (`ReadService`), status (`StatusService`) —
 * over one check of access (`ShardAccess`) and the job's consistency mode (`consistencyFor`).
 */
export class ParameterService {
  /** What pushes come to and when reads may go, per the job's consistency mode. */
  readonly consistency: ShardConsistency;
  private readonly shard: Shard;
  private readonly access: ShardAccess;
  private readonly init: InitService;
  private readonly pushes: PushService;
  private readonly reads: ReadService;
  private readonly status: StatusService;

  constructor(options: ParameterServiceOptions) {
    const { shard, tenure, admission, checkpointer, replication } = options;
    this.shard = shard;
    const access = (this.access = new ShardAccess(shard, tenure));
    this.consistency = consistencyFor(
      options.consistency ?? asynchronous,
      options.roster ?? noRoster,
      shard,
      {
        onLost: options.onLostContributions,
        onClosed: replication && ((record) => replication.replicate(shard.appliedSeq, record)),
        beforeWait: () => access.refuseIfStopping(),
      },
    );
    this.init = new InitService(shard, access, checkpointer);
    this.pushes = new PushService(
      shard,
      access,
      this.consistency,
      admission,
      replication,
      options.onDuplicatePush,
    );
    this.reads = new ReadService(shard, access, this.consistency, options.maxReplyBytes);
    this.status = new StatusService(
      shard,
      access,
      this.consistency,
      admission,
      checkpointer,
      replication,
      options.startedAtMs,
    );
    tenure.onLost((err) => this.abandonWaits(err));
  }

  /** From now on, changes are refused with UNAVAILABLE and waits (initialization, steps) end. */
  beginShutdown(): void {
    this.access.beginShutdown();
    this.abandonWaits(shuttingDownError());
  }

  initParam(request: InitParamRequest__Output, _ctx: CallContext): Promise<InitParamResponse> {
    return this.init.initParam(request);
  }

  initTable(request: InitTableRequest__Output, _ctx: CallContext): Promise<InitTableResponse> {
    return this.init.initTable(request);
  }

  finishInitParams(
    request: FinishInitParamsRequest__Output,
    _ctx: CallContext,
  ): Promise<FinishInitParamsResponse> {
    return this.init.finishInitParams(request);
  }

  /** An empty push for the data path to place a push's bytes in as they arrive. */
  newPush(): PushStaging {
    return this.pushes.newPush();
  }

  sendGrads(
    request: SendGradsRequest__Output,
    ctx: CallContext,
    staging?: PushStaging,
  ): Promise<SendGradsResponse> {
    return this.pushes.sendGrads(request, ctx, staging);
  }

  sendGradsStream(
    chunks: AsyncIterable<SendGradsChunk__Output>,
    ctx: CallContext,
    staging?: PushStaging,
  ): Promise<SendGradsResponse> {
    return this.pushes.sendGradsStream(chunks, ctx, staging);
  }

  getParams(
    request: GetParamsRequest__Output,
    ctx: CallContext,
    copy?: (bytes: Uint8Array) => Uint8Array,
  ): Promise<GetParamsResponse> {
    return this.reads.getParams(request, ctx, copy);
  }

  getRows(request: GetRowsRequest__Output, ctx: CallContext): Promise<GetRowsResponse> {
    return this.reads.getRows(request, ctx);
  }

  listParams(request: ListParamsRequest__Output, ctx: CallContext): Promise<ListParamsResponse> {
    return this.reads.listParams(request, ctx);
  }

  saveCheckpoint(): Promise<SaveCheckpointResponse> {
    return this.status.saveCheckpoint();
  }

  getShardStatus(request?: GetShardStatusRequest__Output): GetShardStatusResponse {
    return this.status.getShardStatus(request);
  }

  /** Calls waiting for initialization or for the clock end with `err`; the open step is dropped. */
  private abandonWaits(err: unknown): void {
    this.shard.abandonWaiters(err);
    this.consistency.abandon(err);
  }
}
