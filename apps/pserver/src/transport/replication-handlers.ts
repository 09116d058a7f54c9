import type { Logger } from '@pserver/logging';
import type { ReplicationHandlers } from '@pserver/proto';
import { bidiStreamHandler, serverStreamHandler, unaryHandler } from '@pserver/rpc';
import type { ReplicationService } from '../replication/replication-service';

/** The grpc-js handlers of `pserver.v1.Replication`, each adapting one service method. */
export function replicationHandlers(
  service: ReplicationService,
  logger: Logger,
): ReplicationHandlers {
  return {
    FetchSnapshot: serverStreamHandler(
      'FetchSnapshot',
      (request, ctx, send) => service.fetchSnapshot(request, ctx, send),
      logger,
    ),
    ReplicaLoaded: unaryHandler(
      'ReplicaLoaded',
      (request) => service.replicaLoaded(request),
      logger,
    ),
    ForwardStream: bidiStreamHandler(
      'ForwardStream',
      (request) => service.forwardBatch(request),
      logger,
    ),
  };
}
