// Original file: proto/pserver/v1/master.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { BeginInitRequest as _pserver_v1_BeginInitRequest, BeginInitRequest__Output as _pserver_v1_BeginInitRequest__Output } from '../../pserver/v1/BeginInitRequest';
import type { BeginInitResponse as _pserver_v1_BeginInitResponse, BeginInitResponse__Output as _pserver_v1_BeginInitResponse__Output } from '../../pserver/v1/BeginInitResponse';
import type { ClusterView as _pserver_v1_ClusterView, ClusterView__Output as _pserver_v1_ClusterView__Output } from '../../pserver/v1/ClusterView';
import type { FinishInitRequest as _pserver_v1_FinishInitRequest, FinishInitRequest__Output as _pserver_v1_FinishInitRequest__Output } from '../../pserver/v1/FinishInitRequest';
import type { FinishInitResponse as _pserver_v1_FinishInitResponse, FinishInitResponse__Output as _pserver_v1_FinishInitResponse__Output } from '../../pserver/v1/FinishInitResponse';
import type { FinishJobRequest as _pserver_v1_FinishJobRequest, FinishJobRequest__Output as _pserver_v1_FinishJobRequest__Output } from '../../pserver/v1/FinishJobRequest';
import type { FinishJobResponse as _pserver_v1_FinishJobResponse, FinishJobResponse__Output as _pserver_v1_FinishJobResponse__Output } from '../../pserver/v1/FinishJobResponse';
import type { GetClusterViewRequest as _pserver_v1_GetClusterViewRequest, GetClusterViewRequest__Output as _pserver_v1_GetClusterViewRequest__Output } from '../../pserver/v1/GetClusterViewRequest';
import type { GetTaskRequest as _pserver_v1_GetTaskRequest, GetTaskRequest__Output as _pserver_v1_GetTaskRequest__Output } from '../../pserver/v1/GetTaskRequest';
import type { GetTaskResponse as _pserver_v1_GetTaskResponse, GetTaskResponse__Output as _pserver_v1_GetTaskResponse__Output } from '../../pserver/v1/GetTaskResponse';
import type { KeepAliveRequest as _pserver_v1_KeepAliveRequest, KeepAliveRequest__Output as _pserver_v1_KeepAliveRequest__Output } from '../../pserver/v1/KeepAliveRequest';
import type { KeepAliveResponse as _pserver_v1_KeepAliveResponse, KeepAliveResponse__Output as _pserver_v1_KeepAliveResponse__Output } from '../../pserver/v1/KeepAliveResponse';
import type { RegisterTrainerRequest as _pserver_v1_RegisterTrainerRequest, RegisterTrainerRequest__Output as _pserver_v1_RegisterTrainerRequest__Output } from '../../pserver/v1/RegisterTrainerRequest';
import type { RegisterTrainerResponse as _pserver_v1_RegisterTrainerResponse, RegisterTrainerResponse__Output as _pserver_v1_RegisterTrainerResponse__Output } from '../../pserver/v1/RegisterTrainerResponse';
import type { SetDatasetRequest as _pserver_v1_SetDatasetRequest, SetDatasetRequest__Output as _pserver_v1_SetDatasetRequest__Output } from '../../pserver/v1/SetDatasetRequest';
import type { SetDatasetResponse as _pserver_v1_SetDatasetResponse, SetDatasetResponse__Output as _pserver_v1_SetDatasetResponse__Output } from '../../pserver/v1/SetDatasetResponse';
import type { SetDesiredShardsRequest as _pserver_v1_SetDesiredShardsRequest, SetDesiredShardsRequest__Output as _pserver_v1_SetDesiredShardsRequest__Output } from '../../pserver/v1/SetDesiredShardsRequest';
import type { SetDesiredShardsResponse as _pserver_v1_SetDesiredShardsResponse, SetDesiredShardsResponse__Output as _pserver_v1_SetDesiredShardsResponse__Output } from '../../pserver/v1/SetDesiredShardsResponse';
import type { StatusRequest as _pserver_v1_StatusRequest, StatusRequest__Output as _pserver_v1_StatusRequest__Output } from '../../pserver/v1/StatusRequest';
import type { StatusResponse as _pserver_v1_StatusResponse, StatusResponse__Output as _pserver_v1_StatusResponse__Output } from '../../pserver/v1/StatusResponse';
import type { TaskFailedRequest as _pserver_v1_TaskFailedRequest, TaskFailedRequest__Output as _pserver_v1_TaskFailedRequest__Output } from '../../pserver/v1/TaskFailedRequest';
import type { TaskFailedResponse as _pserver_v1_TaskFailedResponse, TaskFailedResponse__Output as _pserver_v1_TaskFailedResponse__Output } from '../../pserver/v1/TaskFailedResponse';
import type { TaskFinishedRequest as _pserver_v1_TaskFinishedRequest, TaskFinishedRequest__Output as _pserver_v1_TaskFinishedRequest__Output } from '../../pserver/v1/TaskFinishedRequest';
import type { TaskFinishedResponse as _pserver_v1_TaskFinishedResponse, TaskFinishedResponse__Output as _pserver_v1_TaskFinishedResponse__Output } from '../../pserver/v1/TaskFinishedResponse';
import type { UnregisterTrainerRequest as _pserver_v1_UnregisterTrainerRequest, UnregisterTrainerRequest__Output as _pserver_v1_UnregisterTrainerRequest__Output } from '../../pserver/v1/UnregisterTrainerRequest';
import type { UnregisterTrainerResponse as _pserver_v1_UnregisterTrainerResponse, UnregisterTrainerResponse__Output as _pserver_v1_UnregisterTrainerResponse__Output } from '../../pserver/v1/UnregisterTrainerResponse';
import type { WatchClusterRequest as _pserver_v1_WatchClusterRequest, WatchClusterRequest__Output as _pserver_v1_WatchClusterRequest__Output } from '../../pserver/v1/WatchClusterRequest';

/**
 * The job's coordinator, elected among 1..n replicas. It assigns shard indices to pservers,
 * keeps the trainer registry, elects the trainer that initializes the parameters, and hands out
 * dataset tasks by pass. A follower answers every call UNAVAILABLE with the leader's address in
 * the `pserver-leader` trailer; clients follow it.
 */
export interface MasterClient extends grpc.Client {
  /**
   * Asks whether this trainer should initialize the parameters. Exactly one live trainer is told
   * to; if it dies before FinishInit, another is.
   */
  BeginInit(argument: _pserver_v1_BeginInitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  BeginInit(argument: _pserver_v1_BeginInitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  BeginInit(argument: _pserver_v1_BeginInitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  BeginInit(argument: _pserver_v1_BeginInitRequest, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Asks whether this trainer should initialize the parameters. Exactly one live trainer is told
   * to; if it dies before FinishInit, another is.
   */
  beginInit(argument: _pserver_v1_BeginInitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  beginInit(argument: _pserver_v1_BeginInitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  beginInit(argument: _pserver_v1_BeginInitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  beginInit(argument: _pserver_v1_BeginInitRequest, callback: grpc.requestCallback<_pserver_v1_BeginInitResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Reports that the initializing trainer has finished (FinishInitParams on every shard).
   */
  FinishInit(argument: _pserver_v1_FinishInitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  FinishInit(argument: _pserver_v1_FinishInitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  FinishInit(argument: _pserver_v1_FinishInitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  FinishInit(argument: _pserver_v1_FinishInitRequest, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Reports that the initializing trainer has finished (FinishInitParams on every shard).
   */
  finishInit(argument: _pserver_v1_FinishInitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  finishInit(argument: _pserver_v1_FinishInitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  finishInit(argument: _pserver_v1_FinishInitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  finishInit(argument: _pserver_v1_FinishInitRequest, callback: grpc.requestCallback<_pserver_v1_FinishInitResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Finishes the job once `trainers` trainers asked (each counted once, by name; 0 or 1: at
   * once). A finished job stays finished: no index is assigned again, every pserver commits a
   * final checkpoint of what it serves and exits 0, the masters exit 0 once no pserver is left,
   * and RegisterTrainer fails FAILED_PRECONDITION (MASTER_JOB_FINISHED). Trainers and admins.
   */
  FinishJob(argument: _pserver_v1_FinishJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  FinishJob(argument: _pserver_v1_FinishJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  FinishJob(argument: _pserver_v1_FinishJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  FinishJob(argument: _pserver_v1_FinishJobRequest, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Finishes the job once `trainers` trainers asked (each counted once, by name; 0 or 1: at
   * once). A finished job stays finished: no index is assigned again, every pserver commits a
   * final checkpoint of what it serves and exits 0, the masters exit 0 once no pserver is left,
   * and RegisterTrainer fails FAILED_PRECONDITION (MASTER_JOB_FINISHED). Trainers and admins.
   */
  finishJob(argument: _pserver_v1_FinishJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  finishJob(argument: _pserver_v1_FinishJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  finishJob(argument: _pserver_v1_FinishJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  finishJob(argument: _pserver_v1_FinishJobRequest, callback: grpc.requestCallback<_pserver_v1_FinishJobResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The current cluster view.
   */
  GetClusterView(argument: _pserver_v1_GetClusterViewRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  GetClusterView(argument: _pserver_v1_GetClusterViewRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  GetClusterView(argument: _pserver_v1_GetClusterViewRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  GetClusterView(argument: _pserver_v1_GetClusterViewRequest, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  /**
   * The current cluster view.
   */
  getClusterView(argument: _pserver_v1_GetClusterViewRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  getClusterView(argument: _pserver_v1_GetClusterViewRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  getClusterView(argument: _pserver_v1_GetClusterViewRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  getClusterView(argument: _pserver_v1_GetClusterViewRequest, callback: grpc.requestCallback<_pserver_v1_ClusterView__Output>): grpc.ClientUnaryCall;
  
  /**
   * Hands out a task of the caller's pass (RequestContext.pass). Idempotent per request_id: a retry
   * of a call whose reply was lost gets the same task.
   */
  GetTask(argument: _pserver_v1_GetTaskRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  GetTask(argument: _pserver_v1_GetTaskRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  GetTask(argument: _pserver_v1_GetTaskRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  GetTask(argument: _pserver_v1_GetTaskRequest, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Hands out a task of the caller's pass (RequestContext.pass). Idempotent per request_id: a retry
   * of a call whose reply was lost gets the same task.
   */
  getTask(argument: _pserver_v1_GetTaskRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  getTask(argument: _pserver_v1_GetTaskRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  getTask(argument: _pserver_v1_GetTaskRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  getTask(argument: _pserver_v1_GetTaskRequest, callback: grpc.requestCallback<_pserver_v1_GetTaskResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Keeps a trainer's session alive; call it well within the session TTL. NOT_FOUND
   * (MASTER_SESSION_EXPIRED) once the session has expired: the trainer registers again and gets
   * a new id.
   */
  KeepAlive(argument: _pserver_v1_KeepAliveRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  KeepAlive(argument: _pserver_v1_KeepAliveRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  KeepAlive(argument: _pserver_v1_KeepAliveRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  KeepAlive(argument: _pserver_v1_KeepAliveRequest, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Keeps a trainer's session alive; call it well within the session TTL. NOT_FOUND
   * (MASTER_SESSION_EXPIRED) once the session has expired: the trainer registers again and gets
   * a new id.
   */
  keepAlive(argument: _pserver_v1_KeepAliveRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  keepAlive(argument: _pserver_v1_KeepAliveRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  keepAlive(argument: _pserver_v1_KeepAliveRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  keepAlive(argument: _pserver_v1_KeepAliveRequest, callback: grpc.requestCallback<_pserver_v1_KeepAliveResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Registers a trainer and issues it an id never used before in this job.
   */
  RegisterTrainer(argument: _pserver_v1_RegisterTrainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  RegisterTrainer(argument: _pserver_v1_RegisterTrainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  RegisterTrainer(argument: _pserver_v1_RegisterTrainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  RegisterTrainer(argument: _pserver_v1_RegisterTrainerRequest, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Registers a trainer and issues it an id never used before in this job.
   */
  registerTrainer(argument: _pserver_v1_RegisterTrainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  registerTrainer(argument: _pserver_v1_RegisterTrainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  registerTrainer(argument: _pserver_v1_RegisterTrainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  registerTrainer(argument: _pserver_v1_RegisterTrainerRequest, callback: grpc.requestCallback<_pserver_v1_RegisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Sets the job's dataset. Only the first call counts: the same dataset again is accepted, a
   * different one is FAILED_PRECONDITION.
   */
  SetDataset(argument: _pserver_v1_SetDatasetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  SetDataset(argument: _pserver_v1_SetDatasetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  SetDataset(argument: _pserver_v1_SetDatasetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  SetDataset(argument: _pserver_v1_SetDatasetRequest, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Sets the job's dataset. Only the first call counts: the same dataset again is accepted, a
   * different one is FAILED_PRECONDITION.
   */
  setDataset(argument: _pserver_v1_SetDatasetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  setDataset(argument: _pserver_v1_SetDatasetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  setDataset(argument: _pserver_v1_SetDatasetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  setDataset(argument: _pserver_v1_SetDatasetRequest, callback: grpc.requestCallback<_pserver_v1_SetDatasetResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Admin: sets the desired shard count. Before the parameters are initialized: refused
   * (FAILED_PRECONDITION, MASTER_SHARDS_IN_USE) while it would orphan a live shard. After: only
   * while no earlier change is pending (MASTER_RESHAPE_PENDING); it begins a reshape: the
   * pservers of the new count each restore their share of the checkpoints written at the old
   * one. A job that is down changes at once; a running one first has every primary commit a
   * final checkpoint and hand its shard back (`ReshapeStatus.live`), then changes, its pservers
   * spares again: the job needs as many pservers as the new count has shards.
   */
  SetDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  SetDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  SetDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  SetDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Admin: sets the desired shard count. Before the parameters are initialized: refused
   * (FAILED_PRECONDITION, MASTER_SHARDS_IN_USE) while it would orphan a live shard. After: only
   * while no earlier change is pending (MASTER_RESHAPE_PENDING); it begins a reshape: the
   * pservers of the new count each restore their share of the checkpoints written at the old
   * one. A job that is down changes at once; a running one first has every primary commit a
   * final checkpoint and hand its shard back (`ReshapeStatus.live`), then changes, its pservers
   * spares again: the job needs as many pservers as the new count has shards.
   */
  setDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  setDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  setDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  setDesiredShards(argument: _pserver_v1_SetDesiredShardsRequest, callback: grpc.requestCallback<_pserver_v1_SetDesiredShardsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The leader, shards, trainers and the pass's progress.
   */
  Status(argument: _pserver_v1_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  Status(argument: _pserver_v1_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  Status(argument: _pserver_v1_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  Status(argument: _pserver_v1_StatusRequest, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The leader, shards, trainers and the pass's progress.
   */
  status(argument: _pserver_v1_StatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  status(argument: _pserver_v1_StatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  status(argument: _pserver_v1_StatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  status(argument: _pserver_v1_StatusRequest, callback: grpc.requestCallback<_pserver_v1_StatusResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Reports a task failed: it returns to the queue, or is set aside after too many failures. A
   * report for an earlier dispatch of the task is ignored.
   */
  TaskFailed(argument: _pserver_v1_TaskFailedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  TaskFailed(argument: _pserver_v1_TaskFailedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  TaskFailed(argument: _pserver_v1_TaskFailedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  TaskFailed(argument: _pserver_v1_TaskFailedRequest, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Reports a task failed: it returns to the queue, or is set aside after too many failures. A
   * report for an earlier dispatch of the task is ignored.
   */
  taskFailed(argument: _pserver_v1_TaskFailedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  taskFailed(argument: _pserver_v1_TaskFailedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  taskFailed(argument: _pserver_v1_TaskFailedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  taskFailed(argument: _pserver_v1_TaskFailedRequest, callback: grpc.requestCallback<_pserver_v1_TaskFailedResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Reports a task done. A report for an earlier dispatch of the task is ignored.
   */
  TaskFinished(argument: _pserver_v1_TaskFinishedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  TaskFinished(argument: _pserver_v1_TaskFinishedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  TaskFinished(argument: _pserver_v1_TaskFinishedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  TaskFinished(argument: _pserver_v1_TaskFinishedRequest, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Reports a task done. A report for an earlier dispatch of the task is ignored.
   */
  taskFinished(argument: _pserver_v1_TaskFinishedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  taskFinished(argument: _pserver_v1_TaskFinishedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  taskFinished(argument: _pserver_v1_TaskFinishedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  taskFinished(argument: _pserver_v1_TaskFinishedRequest, callback: grpc.requestCallback<_pserver_v1_TaskFinishedResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Ends a trainer's session now: its pending tasks return to the queue and, if it was
   * initializing the parameters, another trainer is chosen.
   */
  UnregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  UnregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  UnregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  UnregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Ends a trainer's session now: its pending tasks return to the queue and, if it was
   * initializing the parameters, another trainer is chosen.
   */
  unregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  unregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  unregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  unregisterTrainer(argument: _pserver_v1_UnregisterTrainerRequest, callback: grpc.requestCallback<_pserver_v1_UnregisterTrainerResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The current cluster view, then a new one on every change, until the call is cancelled.
   */
  WatchCluster(argument: _pserver_v1_WatchClusterRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_ClusterView__Output>;
  WatchCluster(argument: _pserver_v1_WatchClusterRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_ClusterView__Output>;
  /**
   * The current cluster view, then a new one on every change, until the call is cancelled.
   */
  watchCluster(argument: _pserver_v1_WatchClusterRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_ClusterView__Output>;
  watchCluster(argument: _pserver_v1_WatchClusterRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_ClusterView__Output>;
  
}

/**
 * The job's coordinator, elected among 1..n replicas. It assigns shard indices to pservers,
 * keeps the trainer registry, elects the trainer that initializes the parameters, and hands out
 * dataset tasks by pass. A follower answers every call UNAVAILABLE with the leader's address in
 * the `pserver-leader` trailer; clients follow it.
 */
export interface MasterHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Asks whether this trainer should initialize the parameters. Exactly one live trainer is told
   * to; if it dies before FinishInit, another is.
   */
  BeginInit: grpc.handleUnaryCall<_pserver_v1_BeginInitRequest__Output, _pserver_v1_BeginInitResponse>;
  
  /**
   * Reports that the initializing trainer has finished (FinishInitParams on every shard).
   */
  FinishInit: grpc.handleUnaryCall<_pserver_v1_FinishInitRequest__Output, _pserver_v1_FinishInitResponse>;
  
  /**
   * Finishes the job once `trainers` trainers asked (each counted once, by name; 0 or 1: at
   * once). A finished job stays finished: no index is assigned again, every pserver commits a
   * final checkpoint of what it serves and exits 0, the masters exit 0 once no pserver is left,
   * and RegisterTrainer fails FAILED_PRECONDITION (MASTER_JOB_FINISHED). Trainers and admins.
   */
  FinishJob: grpc.handleUnaryCall<_pserver_v1_FinishJobRequest__Output, _pserver_v1_FinishJobResponse>;
  
  /**
   * The current cluster view.
   */
  GetClusterView: grpc.handleUnaryCall<_pserver_v1_GetClusterViewRequest__Output, _pserver_v1_ClusterView>;
  
  /**
   * Hands out a task of the caller's pass (RequestContext.pass). Idempotent per request_id: a retry
   * of a call whose reply was lost gets the same task.
   */
  GetTask: grpc.handleUnaryCall<_pserver_v1_GetTaskRequest__Output, _pserver_v1_GetTaskResponse>;
  
  /**
   * Keeps a trainer's session alive; call it well within the session TTL. NOT_FOUND
   * (MASTER_SESSION_EXPIRED) once the session has expired: the trainer registers again and gets
   * a new id.
   */
  KeepAlive: grpc.handleUnaryCall<_pserver_v1_KeepAliveRequest__Output, _pserver_v1_KeepAliveResponse>;
  
  /**
   * Registers a trainer and issues it an id never used before in this job.
   */
  RegisterTrainer: grpc.handleUnaryCall<_pserver_v1_RegisterTrainerRequest__Output, _pserver_v1_RegisterTrainerResponse>;
  
  /**
   * Sets the job's dataset. Only the first call counts: the same dataset again is accepted, a
   * different one is FAILED_PRECONDITION.
   */
  SetDataset: grpc.handleUnaryCall<_pserver_v1_SetDatasetRequest__Output, _pserver_v1_SetDatasetResponse>;
  
  /**
   * Admin: sets the desired shard count. Before the parameters are initialized: refused
   * (FAILED_PRECONDITION, MASTER_SHARDS_IN_USE) while it would orphan a live shard. After: only
   * while no earlier change is pending (MASTER_RESHAPE_PENDING); it begins a reshape: the
   * pservers of the new count each restore their share of the checkpoints written at the old
   * one. A job that is down changes at once; a running one first has every primary commit a
   * final checkpoint and hand its shard back (`ReshapeStatus.live`), then changes, its pservers
   * spares again: the job needs as many pservers as the new count has shards.
   */
  SetDesiredShards: grpc.handleUnaryCall<_pserver_v1_SetDesiredShardsRequest__Output, _pserver_v1_SetDesiredShardsResponse>;
  
  /**
   * The leader, shards, trainers and the pass's progress.
   */
  Status: grpc.handleUnaryCall<_pserver_v1_StatusRequest__Output, _pserver_v1_StatusResponse>;
  
  /**
   * Reports a task failed: it returns to the queue, or is set aside after too many failures. A
   * report for an earlier dispatch of the task is ignored.
   */
  TaskFailed: grpc.handleUnaryCall<_pserver_v1_TaskFailedRequest__Output, _pserver_v1_TaskFailedResponse>;
  
  /**
   * Reports a task done. A report for an earlier dispatch of the task is ignored.
   */
  TaskFinished: grpc.handleUnaryCall<_pserver_v1_TaskFinishedRequest__Output, _pserver_v1_TaskFinishedResponse>;
  
  /**
   * Ends a trainer's session now: its pending tasks return to the queue and, if it was
   * initializing the parameters, another trainer is chosen.
   */
  UnregisterTrainer: grpc.handleUnaryCall<_pserver_v1_UnregisterTrainerRequest__Output, _pserver_v1_UnregisterTrainerResponse>;
  
  /**
   * The current cluster view, then a new one on every change, until the call is cancelled.
   */
  WatchCluster: grpc.handleServerStreamingCall<_pserver_v1_WatchClusterRequest__Output, _pserver_v1_ClusterView>;
  
}

export interface MasterDefinition extends grpc.ServiceDefinition {
  BeginInit: MethodDefinition<_pserver_v1_BeginInitRequest, _pserver_v1_BeginInitResponse, _pserver_v1_BeginInitRequest__Output, _pserver_v1_BeginInitResponse__Output>
  FinishInit: MethodDefinition<_pserver_v1_FinishInitRequest, _pserver_v1_FinishInitResponse, _pserver_v1_FinishInitRequest__Output, _pserver_v1_FinishInitResponse__Output>
  FinishJob: MethodDefinition<_pserver_v1_FinishJobRequest, _pserver_v1_FinishJobResponse, _pserver_v1_FinishJobRequest__Output, _pserver_v1_FinishJobResponse__Output>
  GetClusterView: MethodDefinition<_pserver_v1_GetClusterViewRequest, _pserver_v1_ClusterView, _pserver_v1_GetClusterViewRequest__Output, _pserver_v1_ClusterView__Output>
  GetTask: MethodDefinition<_pserver_v1_GetTaskRequest, _pserver_v1_GetTaskResponse, _pserver_v1_GetTaskRequest__Output, _pserver_v1_GetTaskResponse__Output>
  KeepAlive: MethodDefinition<_pserver_v1_KeepAliveRequest, _pserver_v1_KeepAliveResponse, _pserver_v1_KeepAliveRequest__Output, _pserver_v1_KeepAliveResponse__Output>
  RegisterTrainer: MethodDefinition<_pserver_v1_RegisterTrainerRequest, _pserver_v1_RegisterTrainerResponse, _pserver_v1_RegisterTrainerRequest__Output, _pserver_v1_RegisterTrainerResponse__Output>
  SetDataset: MethodDefinition<_pserver_v1_SetDatasetRequest, _pserver_v1_SetDatasetResponse, _pserver_v1_SetDatasetRequest__Output, _pserver_v1_SetDatasetResponse__Output>
  SetDesiredShards: MethodDefinition<_pserver_v1_SetDesiredShardsRequest, _pserver_v1_SetDesiredShardsResponse, _pserver_v1_SetDesiredShardsRequest__Output, _pserver_v1_SetDesiredShardsResponse__Output>
  Status: MethodDefinition<_pserver_v1_StatusRequest, _pserver_v1_StatusResponse, _pserver_v1_StatusRequest__Output, _pserver_v1_StatusResponse__Output>
  TaskFailed: MethodDefinition<_pserver_v1_TaskFailedRequest, _pserver_v1_TaskFailedResponse, _pserver_v1_TaskFailedRequest__Output, _pserver_v1_TaskFailedResponse__Output>
  TaskFinished: MethodDefinition<_pserver_v1_TaskFinishedRequest, _pserver_v1_TaskFinishedResponse, _pserver_v1_TaskFinishedRequest__Output, _pserver_v1_TaskFinishedResponse__Output>
  UnregisterTrainer: MethodDefinition<_pserver_v1_UnregisterTrainerRequest, _pserver_v1_UnregisterTrainerResponse, _pserver_v1_UnregisterTrainerRequest__Output, _pserver_v1_UnregisterTrainerResponse__Output>
  WatchCluster: MethodDefinition<_pserver_v1_WatchClusterRequest, _pserver_v1_ClusterView, _pserver_v1_WatchClusterRequest__Output, _pserver_v1_ClusterView__Output>
}
