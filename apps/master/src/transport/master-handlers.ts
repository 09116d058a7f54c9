import type { Logger } from '@pserver/logging';
import type { MasterHandlers } from '@pserver/proto';
import { serverStreamHandler, unaryHandler } from '@pserver/rpc';
import type { MasterService } from '../service/master-service';

/** The grpc-js handlers of `pserver.v1.Master`. */
export function masterHandlers(service: MasterService, logger: Logger): MasterHandlers {
  return {
    RegisterTrainer: unaryHandler(
      'RegisterTrainer',
      (request) => service.registerTrainer(request),
      logger,
    ),
    KeepAlive: unaryHandler('KeepAlive', (request) => service.keepAlive(request), logger),
    UnregisterTrainer: unaryHandler(
      'UnregisterTrainer',
      (request) => service.unregisterTrainer(request),
      logger,
    ),
    GetClusterView: unaryHandler('GetClusterView', () => service.getClusterView(), logger),
    WatchCluster: serverStreamHandler(
      'WatchCluster',
      (request, ctx, send) => service.watchCluster(request, ctx, send),
      logger,
    ),
    BeginInit: unaryHandler('BeginInit', (request) => service.beginInit(request), logger),
    FinishInit: unaryHandler('FinishInit', (request) => service.finishInit(request), logger),
    SetDataset: unaryHandler('SetDataset', (request) => service.setDataset(request), logger),
    GetTask: unaryHandler('GetTask', (request) => service.getTask(request), logger),
    TaskFinished: unaryHandler('TaskFinished', (request) => service.taskFinished(request), logger),
    TaskFailed: unaryHandler('TaskFailed', (request) => service.taskFailed(request), logger),
    Status: unaryHandler('Status', () => service.status(), logger),
    SetDesiredShards: unaryHandler(
      'SetDesiredShards',
      (request) => service.setDesiredShards(request),
      logger,
    ),
    FinishJob: unaryHandler('FinishJob', (request) => service.finishJob(request), logger),
  };
}
