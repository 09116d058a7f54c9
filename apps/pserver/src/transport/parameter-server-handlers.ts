import type { Logger } from '@pserver/logging';
import type { DrainResponse, ParameterServerHandlers } from '@pserver/proto';
import { clientStreamHandler, unaryHandler } from '@pserver/rpc';
import type { ParameterService } from '../service/parameter-service';

/**
 * The grpc-js handlers of `pserver.v1.ParameterServer`, each adapting one service method. The
 * service comes from `service()`, which throws PSERVER_NOT_SERVING until the shard is ready (in
 * cluster mode the server listens before the master has assigned an index). `drain` is the
 * node's: a spare can be drained too.
 */
export function parameterServerHandlers(
  service: () => ParameterService,
  drain: () => DrainResponse,
  logger: Logger,
): ParameterServerHandlers {
  return {
    InitParam: unaryHandler(
      'InitParam',
      (request, ctx) => service().initParam(request, ctx),
      logger,
    ),
    InitTable: unaryHandler(
      'InitTable',
      (request, ctx) => service().initTable(request, ctx),
      logger,
    ),
    GetRows: unaryHandler('GetRows', (request, ctx) => service().getRows(request, ctx), logger),
    FinishInitParams: unaryHandler(
      'FinishInitParams',
      (request, ctx) => service().finishInitParams(request, ctx),
      logger,
    ),
    SendGrads: unaryHandler(
      'SendGrads',
      (request, ctx) => service().sendGrads(request, ctx),
      logger,
    ),
    SendGradsStream: clientStreamHandler(
      'SendGradsStream',
      (requests, ctx) => service().sendGradsStream(requests, ctx),
      logger,
    ),
    GetParams: unaryHandler(
      'GetParams',
      (request, ctx) => service().getParams(request, ctx),
      logger,
    ),
    ListParams: unaryHandler(
      'ListParams',
      (request, ctx) => service().listParams(request, ctx),
      logger,
    ),
    SaveCheckpoint: unaryHandler('SaveCheckpoint', () => service().saveCheckpoint(), logger),
    GetShardStatus: unaryHandler(
      'GetShardStatus',
      (request) => service().getShardStatus(request),
      logger,
    ),
    Drain: unaryHandler('Drain', () => Promise.resolve(drain()), logger),
  };
}
