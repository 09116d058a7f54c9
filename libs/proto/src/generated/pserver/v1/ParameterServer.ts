// Original file: proto/pserver/v1/parameter_server.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { DrainRequest as _pserver_v1_DrainRequest, DrainRequest__Output as _pserver_v1_DrainRequest__Output } from '../../pserver/v1/DrainRequest';
import type { DrainResponse as _pserver_v1_DrainResponse, DrainResponse__Output as _pserver_v1_DrainResponse__Output } from '../../pserver/v1/DrainResponse';
import type { FinishInitParamsRequest as _pserver_v1_FinishInitParamsRequest, FinishInitParamsRequest__Output as _pserver_v1_FinishInitParamsRequest__Output } from '../../pserver/v1/FinishInitParamsRequest';
import type { FinishInitParamsResponse as _pserver_v1_FinishInitParamsResponse, FinishInitParamsResponse__Output as _pserver_v1_FinishInitParamsResponse__Output } from '../../pserver/v1/FinishInitParamsResponse';
import type { GetParamsRequest as _pserver_v1_GetParamsRequest, GetParamsRequest__Output as _pserver_v1_GetParamsRequest__Output } from '../../pserver/v1/GetParamsRequest';
import type { GetParamsResponse as _pserver_v1_GetParamsResponse, GetParamsResponse__Output as _pserver_v1_GetParamsResponse__Output } from '../../pserver/v1/GetParamsResponse';
import type { GetRowsRequest as _pserver_v1_GetRowsRequest, GetRowsRequest__Output as _pserver_v1_GetRowsRequest__Output } from '../../pserver/v1/GetRowsRequest';
import type { GetRowsResponse as _pserver_v1_GetRowsResponse, GetRowsResponse__Output as _pserver_v1_GetRowsResponse__Output } from '../../pserver/v1/GetRowsResponse';
import type { GetShardStatusRequest as _pserver_v1_GetShardStatusRequest, GetShardStatusRequest__Output as _pserver_v1_GetShardStatusRequest__Output } from '../../pserver/v1/GetShardStatusRequest';
import type { GetShardStatusResponse as _pserver_v1_GetShardStatusResponse, GetShardStatusResponse__Output as _pserver_v1_GetShardStatusResponse__Output } from '../../pserver/v1/GetShardStatusResponse';
import type { InitParamRequest as _pserver_v1_InitParamRequest, InitParamRequest__Output as _pserver_v1_InitParamRequest__Output } from '../../pserver/v1/InitParamRequest';
import type { InitParamResponse as _pserver_v1_InitParamResponse, InitParamResponse__Output as _pserver_v1_InitParamResponse__Output } from '../../pserver/v1/InitParamResponse';
import type { InitTableRequest as _pserver_v1_InitTableRequest, InitTableRequest__Output as _pserver_v1_InitTableRequest__Output } from '../../pserver/v1/InitTableRequest';
import type { InitTableResponse as _pserver_v1_InitTableResponse, InitTableResponse__Output as _pserver_v1_InitTableResponse__Output } from '../../pserver/v1/InitTableResponse';
import type { ListParamsRequest as _pserver_v1_ListParamsRequest, ListParamsRequest__Output as _pserver_v1_ListParamsRequest__Output } from '../../pserver/v1/ListParamsRequest';
import type { ListParamsResponse as _pserver_v1_ListParamsResponse, ListParamsResponse__Output as _pserver_v1_ListParamsResponse__Output } from '../../pserver/v1/ListParamsResponse';
import type { SaveCheckpointRequest as _pserver_v1_SaveCheckpointRequest, SaveCheckpointRequest__Output as _pserver_v1_SaveCheckpointRequest__Output } from '../../pserver/v1/SaveCheckpointRequest';
import type { SaveCheckpointResponse as _pserver_v1_SaveCheckpointResponse, SaveCheckpointResponse__Output as _pserver_v1_SaveCheckpointResponse__Output } from '../../pserver/v1/SaveCheckpointResponse';
import type { SendGradsChunk as _pserver_v1_SendGradsChunk, SendGradsChunk__Output as _pserver_v1_SendGradsChunk__Output } from '../../pserver/v1/SendGradsChunk';
import type { SendGradsRequest as _pserver_v1_SendGradsRequest, SendGradsRequest__Output as _pserver_v1_SendGradsRequest__Output } from '../../pserver/v1/SendGradsRequest';
import type { SendGradsResponse as _pserver_v1_SendGradsResponse, SendGradsResponse__Output as _pserver_v1_SendGradsResponse__Output } from '../../pserver/v1/SendGradsResponse';

/**
 * One shard of a job's parameters. A shard holds tensors and blocks (`<tensor>@<k>`) placed on
 * it by the placement rule, applies optimizer updates as the job's consistency mode says (as
 * pushes arrive, or once per synchronous step), and checkpoints itself.
 * 
 * Every error carries trailing metadata `pserver-error-code` with a stable code, a value of
 * `ErrorCode` (errors.proto; e.g. `PSERVER_ALREADY_INITIALIZED`); clients branch on it, never on
 * message text. A stale shard epoch answers ABORTED with `pserver-shard-epoch`.
 */
export interface ParameterServerClient extends grpc.Client {
  /**
   * Hands this pserver's role over and ends it (an admin call): it answers, then stops taking
   * calls, lets those in flight finish, commits a final checkpoint of the shard it serves, gives
   * up its lease and exits 0; the master gives the index to a spare (an in-sync replica first),
   * which restores that checkpoint, so no acknowledged push is lost. A spare or a replica just
   * leaves. A standalone pserver, which no master replaces, refuses (FAILED_PRECONDITION,
   * PSERVER_CANNOT_DRAIN).
   */
  Drain(argument: _pserver_v1_DrainRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  Drain(argument: _pserver_v1_DrainRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  Drain(argument: _pserver_v1_DrainRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  Drain(argument: _pserver_v1_DrainRequest, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Hands this pserver's role over and ends it (an admin call): it answers, then stops taking
   * calls, lets those in flight finish, commits a final checkpoint of the shard it serves, gives
   * up its lease and exits 0; the master gives the index to a spare (an in-sync replica first),
   * which restores that checkpoint, so no acknowledged push is lost. A spare or a replica just
   * leaves. A standalone pserver, which no master replaces, refuses (FAILED_PRECONDITION,
   * PSERVER_CANNOT_DRAIN).
   */
  drain(argument: _pserver_v1_DrainRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  drain(argument: _pserver_v1_DrainRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  drain(argument: _pserver_v1_DrainRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  drain(argument: _pserver_v1_DrainRequest, callback: grpc.requestCallback<_pserver_v1_DrainResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Commits a checkpoint of the shard, then marks it initialized, once; a second call fails as
   * InitParam does after it. If the checkpoint fails, the call fails with its status (e.g.
   * RESOURCE_EXHAUSTED, CHECKPOINT_NO_SPACE) and the shard stays uninitialized: retry it.
   */
  FinishInitParams(argument: _pserver_v1_FinishInitParamsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  FinishInitParams(argument: _pserver_v1_FinishInitParamsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  FinishInitParams(argument: _pserver_v1_FinishInitParamsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  FinishInitParams(argument: _pserver_v1_FinishInitParamsRequest, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Commits a checkpoint of the shard, then marks it initialized, once; a second call fails as
   * InitParam does after it. If the checkpoint fails, the call fails with its status (e.g.
   * RESOURCE_EXHAUSTED, CHECKPOINT_NO_SPACE) and the shard stays uninitialized: retry it.
   */
  finishInitParams(argument: _pserver_v1_FinishInitParamsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  finishInitParams(argument: _pserver_v1_FinishInitParamsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  finishInitParams(argument: _pserver_v1_FinishInitParamsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  finishInitParams(argument: _pserver_v1_FinishInitParamsRequest, callback: grpc.requestCallback<_pserver_v1_FinishInitParamsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The current values of the named tensors, in request order. Before initialization it waits,
   * up to the call's deadline (DEADLINE_EXCEEDED). A read by a trainer for step k (context.step)
   * waits as the job's consistency mode says: in SYNC until step k − 1 is closed, in
   * BOUNDED_STALENESS until every roster member pushed step k − 1 − staleness (ASYNC, or step 0:
   * no wait), also up to the deadline. A reply larger than the server's message
   * limit is refused (INVALID_ARGUMENT, PSERVER_REPLY_TOO_LARGE): clients split a shard's pull
   * into calls below the limit.
   */
  GetParams(argument: _pserver_v1_GetParamsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  GetParams(argument: _pserver_v1_GetParamsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  GetParams(argument: _pserver_v1_GetParamsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  GetParams(argument: _pserver_v1_GetParamsRequest, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The current values of the named tensors, in request order. Before initialization it waits,
   * up to the call's deadline (DEADLINE_EXCEEDED). A read by a trainer for step k (context.step)
   * waits as the job's consistency mode says: in SYNC until step k − 1 is closed, in
   * BOUNDED_STALENESS until every roster member pushed step k − 1 − staleness (ASYNC, or step 0:
   * no wait), also up to the deadline. A reply larger than the server's message
   * limit is refused (INVALID_ARGUMENT, PSERVER_REPLY_TOO_LARGE): clients split a shard's pull
   * into calls below the limit.
   */
  getParams(argument: _pserver_v1_GetParamsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  getParams(argument: _pserver_v1_GetParamsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  getParams(argument: _pserver_v1_GetParamsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  getParams(argument: _pserver_v1_GetParamsRequest, callback: grpc.requestCallback<_pserver_v1_GetParamsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Rows of a table by id, read-only: an id without a row reads as the table's PullMissing says
   * and never creates one. Before initialization it waits, as GetParams.
   */
  GetRows(argument: _pserver_v1_GetRowsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  GetRows(argument: _pserver_v1_GetRowsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  GetRows(argument: _pserver_v1_GetRowsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  GetRows(argument: _pserver_v1_GetRowsRequest, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Rows of a table by id, read-only: an id without a row reads as the table's PullMissing says
   * and never creates one. Before initialization it waits, as GetParams.
   */
  getRows(argument: _pserver_v1_GetRowsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  getRows(argument: _pserver_v1_GetRowsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  getRows(argument: _pserver_v1_GetRowsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  getRows(argument: _pserver_v1_GetRowsRequest, callback: grpc.requestCallback<_pserver_v1_GetRowsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * What the shard holds and how it is doing.
   */
  GetShardStatus(argument: _pserver_v1_GetShardStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  GetShardStatus(argument: _pserver_v1_GetShardStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  GetShardStatus(argument: _pserver_v1_GetShardStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  GetShardStatus(argument: _pserver_v1_GetShardStatusRequest, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  /**
   * What the shard holds and how it is doing.
   */
  getShardStatus(argument: _pserver_v1_GetShardStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  getShardStatus(argument: _pserver_v1_GetShardStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  getShardStatus(argument: _pserver_v1_GetShardStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  getShardStatus(argument: _pserver_v1_GetShardStatusRequest, callback: grpc.requestCallback<_pserver_v1_GetShardStatusResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Creates or replaces a tensor before the shard is initialized. After FinishInitParams (or a
   * recovery from a checkpoint) a valid request fails FAILED_PRECONDITION with code
   * PSERVER_ALREADY_INITIALIZED, which an initializing client treats as success; bad input (an
   * optimizer config without a learning rate, say) is INVALID_ARGUMENT in every state.
   */
  InitParam(argument: _pserver_v1_InitParamRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  InitParam(argument: _pserver_v1_InitParamRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  InitParam(argument: _pserver_v1_InitParamRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  InitParam(argument: _pserver_v1_InitParamRequest, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Creates or replaces a tensor before the shard is initialized. After FinishInitParams (or a
   * recovery from a checkpoint) a valid request fails FAILED_PRECONDITION with code
   * PSERVER_ALREADY_INITIALIZED, which an initializing client treats as success; bad input (an
   * optimizer config without a learning rate, say) is INVALID_ARGUMENT in every state.
   */
  initParam(argument: _pserver_v1_InitParamRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  initParam(argument: _pserver_v1_InitParamRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  initParam(argument: _pserver_v1_InitParamRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  initParam(argument: _pserver_v1_InitParamRequest, callback: grpc.requestCallback<_pserver_v1_InitParamResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Creates or replaces a sparse table's part on this shard (its buckets), before the shard is
   * initialized; after it, as InitParam.
   */
  InitTable(argument: _pserver_v1_InitTableRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  InitTable(argument: _pserver_v1_InitTableRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  InitTable(argument: _pserver_v1_InitTableRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  InitTable(argument: _pserver_v1_InitTableRequest, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Creates or replaces a sparse table's part on this shard (its buckets), before the shard is
   * initialized; after it, as InitParam.
   */
  initTable(argument: _pserver_v1_InitTableRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  initTable(argument: _pserver_v1_InitTableRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  initTable(argument: _pserver_v1_InitTableRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  initTable(argument: _pserver_v1_InitTableRequest, callback: grpc.requestCallback<_pserver_v1_InitTableResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The tensors and blocks the shard holds, with their element types, whole shapes and optimizer
   * configs, so that a process that never initialized anything (an evaluator, an exporter) can
   * learn the model from the shards and read it. Before initialization it waits, as GetParams.
   */
  ListParams(argument: _pserver_v1_ListParamsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  ListParams(argument: _pserver_v1_ListParamsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  ListParams(argument: _pserver_v1_ListParamsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  ListParams(argument: _pserver_v1_ListParamsRequest, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The tensors and blocks the shard holds, with their element types, whole shapes and optimizer
   * configs, so that a process that never initialized anything (an evaluator, an exporter) can
   * learn the model from the shards and read it. Before initialization it waits, as GetParams.
   */
  listParams(argument: _pserver_v1_ListParamsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  listParams(argument: _pserver_v1_ListParamsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  listParams(argument: _pserver_v1_ListParamsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  listParams(argument: _pserver_v1_ListParamsRequest, callback: grpc.requestCallback<_pserver_v1_ListParamsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Writes and commits a checkpoint now and returns its meta (an admin call).
   */
  SaveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  SaveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  SaveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  SaveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Writes and commits a checkpoint now and returns its meta (an admin call).
   */
  saveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  saveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  saveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  saveCheckpoint(argument: _pserver_v1_SaveCheckpointRequest, callback: grpc.requestCallback<_pserver_v1_SaveCheckpointResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * One push per (trainer, shard, step): all of the step's gradients for this shard. Every
   * gradient is checked first, then all are applied (in SYNC: accumulated into the open step),
   * so a rejected push changes no byte. Before initialization: FAILED_PRECONDITION
   * (PSERVER_NOT_INITIALIZED). In SYNC and BOUNDED_STALENESS the trainer must be in the shard's
   * roster (FAILED_PRECONDITION, PSERVER_NOT_IN_ROSTER); in SYNC a push for a step after the open
   * one waits, up to its deadline, for the steps before it to close.
   */
  SendGrads(argument: _pserver_v1_SendGradsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  SendGrads(argument: _pserver_v1_SendGradsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  SendGrads(argument: _pserver_v1_SendGradsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  SendGrads(argument: _pserver_v1_SendGradsRequest, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * One push per (trainer, shard, step): all of the step's gradients for this shard. Every
   * gradient is checked first, then all are applied (in SYNC: accumulated into the open step),
   * so a rejected push changes no byte. Before initialization: FAILED_PRECONDITION
   * (PSERVER_NOT_INITIALIZED). In SYNC and BOUNDED_STALENESS the trainer must be in the shard's
   * roster (FAILED_PRECONDITION, PSERVER_NOT_IN_ROSTER); in SYNC a push for a step after the open
   * one waits, up to its deadline, for the steps before it to close.
   */
  sendGrads(argument: _pserver_v1_SendGradsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  sendGrads(argument: _pserver_v1_SendGradsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  sendGrads(argument: _pserver_v1_SendGradsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  sendGrads(argument: _pserver_v1_SendGradsRequest, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * SendGrads for pushes larger than one message: the chunks are staged and applied, all or
   * nothing, only when the client half-closes the stream. A broken-off stream changes nothing.
   */
  SendGradsStream(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  SendGradsStream(metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  SendGradsStream(options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  SendGradsStream(callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  /**
   * SendGrads for pushes larger than one message: the chunks are staged and applied, all or
   * nothing, only when the client half-closes the stream. A broken-off stream changes nothing.
   */
  sendGradsStream(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  sendGradsStream(metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  sendGradsStream(options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  sendGradsStream(callback: grpc.requestCallback<_pserver_v1_SendGradsResponse__Output>): grpc.ClientWritableStream<_pserver_v1_SendGradsChunk>;
  
}

/**
 * One shard of a job's parameters. A shard holds tensors and blocks (`<tensor>@<k>`) placed on
 * it by the placement rule, applies optimizer updates as the job's consistency mode says (as
 * pushes arrive, or once per synchronous step), and checkpoints itself.
 * 
 * Every error carries trailing metadata `pserver-error-code` with a stable code, a value of
 * `ErrorCode` (errors.proto; e.g. `PSERVER_ALREADY_INITIALIZED`); clients branch on it, never on
 * message text. A stale shard epoch answers ABORTED with `pserver-shard-epoch`.
 */
export interface ParameterServerHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Hands this pserver's role over and ends it (an admin call): it answers, then stops taking
   * calls, lets those in flight finish, commits a final checkpoint of the shard it serves, gives
   * up its lease and exits 0; the master gives the index to a spare (an in-sync replica first),
   * which restores that checkpoint, so no acknowledged push is lost. A spare or a replica just
   * leaves. A standalone pserver, which no master replaces, refuses (FAILED_PRECONDITION,
   * PSERVER_CANNOT_DRAIN).
   */
  Drain: grpc.handleUnaryCall<_pserver_v1_DrainRequest__Output, _pserver_v1_DrainResponse>;
  
  /**
   * Commits a checkpoint of the shard, then marks it initialized, once; a second call fails as
   * InitParam does after it. If the checkpoint fails, the call fails with its status (e.g.
   * RESOURCE_EXHAUSTED, CHECKPOINT_NO_SPACE) and the shard stays uninitialized: retry it.
   */
  FinishInitParams: grpc.handleUnaryCall<_pserver_v1_FinishInitParamsRequest__Output, _pserver_v1_FinishInitParamsResponse>;
  
  /**
   * The current values of the named tensors, in request order. Before initialization it waits,
   * up to the call's deadline (DEADLINE_EXCEEDED). A read by a trainer for step k (context.step)
   * waits as the job's consistency mode says: in SYNC until step k − 1 is closed, in
   * BOUNDED_STALENESS until every roster member pushed step k − 1 − staleness (ASYNC, or step 0:
   * no wait), also up to the deadline. A reply larger than the server's message
   * limit is refused (INVALID_ARGUMENT, PSERVER_REPLY_TOO_LARGE): clients split a shard's pull
   * into calls below the limit.
   */
  GetParams: grpc.handleUnaryCall<_pserver_v1_GetParamsRequest__Output, _pserver_v1_GetParamsResponse>;
  
  /**
   * Rows of a table by id, read-only: an id without a row reads as the table's PullMissing says
   * and never creates one. Before initialization it waits, as GetParams.
   */
  GetRows: grpc.handleUnaryCall<_pserver_v1_GetRowsRequest__Output, _pserver_v1_GetRowsResponse>;
  
  /**
   * What the shard holds and how it is doing.
   */
  GetShardStatus: grpc.handleUnaryCall<_pserver_v1_GetShardStatusRequest__Output, _pserver_v1_GetShardStatusResponse>;
  
  /**
   * Creates or replaces a tensor before the shard is initialized. After FinishInitParams (or a
   * recovery from a checkpoint) a valid request fails FAILED_PRECONDITION with code
   * PSERVER_ALREADY_INITIALIZED, which an initializing client treats as success; bad input (an
   * optimizer config without a learning rate, say) is INVALID_ARGUMENT in every state.
   */
  InitParam: grpc.handleUnaryCall<_pserver_v1_InitParamRequest__Output, _pserver_v1_InitParamResponse>;
  
  /**
   * Creates or replaces a sparse table's part on this shard (its buckets), before the shard is
   * initialized; after it, as InitParam.
   */
  InitTable: grpc.handleUnaryCall<_pserver_v1_InitTableRequest__Output, _pserver_v1_InitTableResponse>;
  
  /**
   * The tensors and blocks the shard holds, with their element types, whole shapes and optimizer
   * configs, so that a process that never initialized anything (an evaluator, an exporter) can
   * learn the model from the shards and read it. Before initialization it waits, as GetParams.
   */
  ListParams: grpc.handleUnaryCall<_pserver_v1_ListParamsRequest__Output, _pserver_v1_ListParamsResponse>;
  
  /**
   * Writes and commits a checkpoint now and returns its meta (an admin call).
   */
  SaveCheckpoint: grpc.handleUnaryCall<_pserver_v1_SaveCheckpointRequest__Output, _pserver_v1_SaveCheckpointResponse>;
  
  /**
   * One push per (trainer, shard, step): all of the step's gradients for this shard. Every
   * gradient is checked first, then all are applied (in SYNC: accumulated into the open step),
   * so a rejected push changes no byte. Before initialization: FAILED_PRECONDITION
   * (PSERVER_NOT_INITIALIZED). In SYNC and BOUNDED_STALENESS the trainer must be in the shard's
   * roster (FAILED_PRECONDITION, PSERVER_NOT_IN_ROSTER); in SYNC a push for a step after the open
   * one waits, up to its deadline, for the steps before it to close.
   */
  SendGrads: grpc.handleUnaryCall<_pserver_v1_SendGradsRequest__Output, _pserver_v1_SendGradsResponse>;
  
  /**
   * SendGrads for pushes larger than one message: the chunks are staged and applied, all or
   * nothing, only when the client half-closes the stream. A broken-off stream changes nothing.
   */
  SendGradsStream: grpc.handleClientStreamingCall<_pserver_v1_SendGradsChunk__Output, _pserver_v1_SendGradsResponse>;
  
}

export interface ParameterServerDefinition extends grpc.ServiceDefinition {
  Drain: MethodDefinition<_pserver_v1_DrainRequest, _pserver_v1_DrainResponse, _pserver_v1_DrainRequest__Output, _pserver_v1_DrainResponse__Output>
  FinishInitParams: MethodDefinition<_pserver_v1_FinishInitParamsRequest, _pserver_v1_FinishInitParamsResponse, _pserver_v1_FinishInitParamsRequest__Output, _pserver_v1_FinishInitParamsResponse__Output>
  GetParams: MethodDefinition<_pserver_v1_GetParamsRequest, _pserver_v1_GetParamsResponse, _pserver_v1_GetParamsRequest__Output, _pserver_v1_GetParamsResponse__Output>
  GetRows: MethodDefinition<_pserver_v1_GetRowsRequest, _pserver_v1_GetRowsResponse, _pserver_v1_GetRowsRequest__Output, _pserver_v1_GetRowsResponse__Output>
  GetShardStatus: MethodDefinition<_pserver_v1_GetShardStatusRequest, _pserver_v1_GetShardStatusResponse, _pserver_v1_GetShardStatusRequest__Output, _pserver_v1_GetShardStatusResponse__Output>
  InitParam: MethodDefinition<_pserver_v1_InitParamRequest, _pserver_v1_InitParamResponse, _pserver_v1_InitParamRequest__Output, _pserver_v1_InitParamResponse__Output>
  InitTable: MethodDefinition<_pserver_v1_InitTableRequest, _pserver_v1_InitTableResponse, _pserver_v1_InitTableRequest__Output, _pserver_v1_InitTableResponse__Output>
  ListParams: MethodDefinition<_pserver_v1_ListParamsRequest, _pserver_v1_ListParamsResponse, _pserver_v1_ListParamsRequest__Output, _pserver_v1_ListParamsResponse__Output>
  SaveCheckpoint: MethodDefinition<_pserver_v1_SaveCheckpointRequest, _pserver_v1_SaveCheckpointResponse, _pserver_v1_SaveCheckpointRequest__Output, _pserver_v1_SaveCheckpointResponse__Output>
  SendGrads: MethodDefinition<_pserver_v1_SendGradsRequest, _pserver_v1_SendGradsResponse, _pserver_v1_SendGradsRequest__Output, _pserver_v1_SendGradsResponse__Output>
  SendGradsStream: MethodDefinition<_pserver_v1_SendGradsChunk, _pserver_v1_SendGradsResponse, _pserver_v1_SendGradsChunk__Output, _pserver_v1_SendGradsResponse__Output>
}
