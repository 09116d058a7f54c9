// Original file: proto/pserver/v1/replication.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { FetchSnapshotRequest as _pserver_v1_FetchSnapshotRequest, FetchSnapshotRequest__Output as _pserver_v1_FetchSnapshotRequest__Output } from '../../pserver/v1/FetchSnapshotRequest';
import type { ForwardBatchRequest as _pserver_v1_ForwardBatchRequest, ForwardBatchRequest__Output as _pserver_v1_ForwardBatchRequest__Output } from '../../pserver/v1/ForwardBatchRequest';
import type { ForwardResponse as _pserver_v1_ForwardResponse, ForwardResponse__Output as _pserver_v1_ForwardResponse__Output } from '../../pserver/v1/ForwardResponse';
import type { ReplicaLoadedRequest as _pserver_v1_ReplicaLoadedRequest, ReplicaLoadedRequest__Output as _pserver_v1_ReplicaLoadedRequest__Output } from '../../pserver/v1/ReplicaLoadedRequest';
import type { ReplicaLoadedResponse as _pserver_v1_ReplicaLoadedResponse, ReplicaLoadedResponse__Output as _pserver_v1_ReplicaLoadedResponse__Output } from '../../pserver/v1/ReplicaLoadedResponse';
import type { SnapshotChunk as _pserver_v1_SnapshotChunk, SnapshotChunk__Output as _pserver_v1_SnapshotChunk__Output } from '../../pserver/v1/SnapshotChunk';

/**
 * Between the pservers of one shard: its primary (the pserver `assign/<i>` names) and its
 * replicas (`replica/<i>/<member>`, assigned by the master from the spares). A replica joins by
 * fetching a copy of the shard from the primary (the checkpoint format, streamed) and then
 * applies every push the primary applies, in the primary's order, with the same kernels; the
 * primary acknowledges a push to its trainer only after every replica in sync has applied it, so
 * a replica the master promotes holds every acknowledged update.
 * 
 * Every call names the primary's shard epoch: a pserver answers only the current primary of the
 * shard it replicates (a deposed primary's call is refused, PSERVER_STALE_EPOCH or
 * PSERVER_NOT_REPLICA, and changes nothing). Under mutual TLS only the pserver role may call.
 */
export interface ReplicationClient extends grpc.Client {
  /**
   * Served by the primary: a copy of the shard for a replica joining it, as the bytes of a full
   * checkpoint file, in order. From the copy's sequence number on, the primary forwards every
   * push it applies to the replica.
   */
  FetchSnapshot(argument: _pserver_v1_FetchSnapshotRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_SnapshotChunk__Output>;
  FetchSnapshot(argument: _pserver_v1_FetchSnapshotRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_SnapshotChunk__Output>;
  /**
   * Served by the primary: a copy of the shard for a replica joining it, as the bytes of a full
   * checkpoint file, in order. From the copy's sequence number on, the primary forwards every
   * push it applies to the replica.
   */
  fetchSnapshot(argument: _pserver_v1_FetchSnapshotRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_SnapshotChunk__Output>;
  fetchSnapshot(argument: _pserver_v1_FetchSnapshotRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_pserver_v1_SnapshotChunk__Output>;
  
  /**
   * Served by a replica (or a live move's receiver): the primary's forwards on one long-lived
   * stream, in batches (the pushes applied while earlier batches were unanswered), in the order
   * of their sequence numbers, each forward applied in its turn (one that comes early waits for
   * those before it; one applied already is answered at once); each batch is answered, in order,
   * once every forward of it is applied. A refusal ends the stream with its status; the primary
   * then opens another and sends the unanswered batches again. One stream for every push, rather
   * than a call for each, is what makes a replica cheap.
   */
  ForwardStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_pserver_v1_ForwardBatchRequest, _pserver_v1_ForwardResponse__Output>;
  ForwardStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_pserver_v1_ForwardBatchRequest, _pserver_v1_ForwardResponse__Output>;
  /**
   * Served by a replica (or a live move's receiver): the primary's forwards on one long-lived
   * stream, in batches (the pushes applied while earlier batches were unanswered), in the order
   * of their sequence numbers, each forward applied in its turn (one that comes early waits for
   * those before it; one applied already is answered at once); each batch is answered, in order,
   * once every forward of it is applied. A refusal ends the stream with its status; the primary
   * then opens another and sends the unanswered batches again. One stream for every push, rather
   * than a call for each, is what makes a replica cheap.
   */
  forwardStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_pserver_v1_ForwardBatchRequest, _pserver_v1_ForwardResponse__Output>;
  forwardStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_pserver_v1_ForwardBatchRequest, _pserver_v1_ForwardResponse__Output>;
  
  /**
   * Served by the primary: the replica has loaded the copy. From then on the primary waits for
   * the replica's acknowledgement before it acknowledges a push; the reply says whether the
   * replica is in sync already (it holds every push the primary acknowledged).
   */
  ReplicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  ReplicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  ReplicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  ReplicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Served by the primary: the replica has loaded the copy. From then on the primary waits for
   * the replica's acknowledgement before it acknowledges a push; the reply says whether the
   * replica is in sync already (it holds every push the primary acknowledged).
   */
  replicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  replicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  replicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  replicaLoaded(argument: _pserver_v1_ReplicaLoadedRequest, callback: grpc.requestCallback<_pserver_v1_ReplicaLoadedResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * Between the pservers of one shard: its primary (the pserver `assign/<i>` names) and its
 * replicas (`replica/<i>/<member>`, assigned by the master from the spares). A replica joins by
 * fetching a copy of the shard from the primary (the checkpoint format, streamed) and then
 * applies every push the primary applies, in the primary's order, with the same kernels; the
 * primary acknowledges a push to its trainer only after every replica in sync has applied it, so
 * a replica the master promotes holds every acknowledged update.
 * 
 * Every call names the primary's shard epoch: a pserver answers only the current primary of the
 * shard it replicates (a deposed primary's call is refused, PSERVER_STALE_EPOCH or
 * PSERVER_NOT_REPLICA, and changes nothing). Under mutual TLS only the pserver role may call.
 */
export interface ReplicationHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Served by the primary: a copy of the shard for a replica joining it, as the bytes of a full
   * checkpoint file, in order. From the copy's sequence number on, the primary forwards every
   * push it applies to the replica.
   */
  FetchSnapshot: grpc.handleServerStreamingCall<_pserver_v1_FetchSnapshotRequest__Output, _pserver_v1_SnapshotChunk>;
  
  /**
   * Served by a replica (or a live move's receiver): the primary's forwards on one long-lived
   * stream, in batches (the pushes applied while earlier batches were unanswered), in the order
   * of their sequence numbers, each forward applied in its turn (one that comes early waits for
   * those before it; one applied already is answered at once); each batch is answered, in order,
   * once every forward of it is applied. A refusal ends the stream with its status; the primary
   * then opens another and sends the unanswered batches again. One stream for every push, rather
   * than a call for each, is what makes a replica cheap.
   */
  ForwardStream: grpc.handleBidiStreamingCall<_pserver_v1_ForwardBatchRequest__Output, _pserver_v1_ForwardResponse>;
  
  /**
   * Served by the primary: the replica has loaded the copy. From then on the primary waits for
   * the replica's acknowledgement before it acknowledges a push; the reply says whether the
   * replica is in sync already (it holds every push the primary acknowledged).
   */
  ReplicaLoaded: grpc.handleUnaryCall<_pserver_v1_ReplicaLoadedRequest__Output, _pserver_v1_ReplicaLoadedResponse>;
  
}

export interface ReplicationDefinition extends grpc.ServiceDefinition {
  FetchSnapshot: MethodDefinition<_pserver_v1_FetchSnapshotRequest, _pserver_v1_SnapshotChunk, _pserver_v1_FetchSnapshotRequest__Output, _pserver_v1_SnapshotChunk__Output>
  ForwardStream: MethodDefinition<_pserver_v1_ForwardBatchRequest, _pserver_v1_ForwardResponse, _pserver_v1_ForwardBatchRequest__Output, _pserver_v1_ForwardResponse__Output>
  ReplicaLoaded: MethodDefinition<_pserver_v1_ReplicaLoadedRequest, _pserver_v1_ReplicaLoadedResponse, _pserver_v1_ReplicaLoadedRequest__Output, _pserver_v1_ReplicaLoadedResponse__Output>
}
