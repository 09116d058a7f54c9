export type { ErrorCode } from './error-table';
export { errorTable, isErrorCode } from './error-table';
export { bindServer, serverOptions, shutdownServer } from './grpc-server';
export type { ServingStatus } from './health';
export { checkHealth, HealthService } from './health';
export type { ErrorFacts } from './metadata-keys';
export { metadataKeys } from './metadata-keys';
export type { CodedError, StatusObject } from './status-mapping';
export {
  fromServiceError,
  internalErrorMessage,
  isCodedError,
  RpcError,
  toStatus,
} from './status-mapping';
