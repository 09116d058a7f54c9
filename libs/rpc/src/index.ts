export { bindServer, serverOptions, shutdownServer } from './grpc-server';
export type { ServingStatus } from './health';
export { checkHealth, HealthService } from './health';
