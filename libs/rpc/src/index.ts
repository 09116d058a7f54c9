export type { ErrorCode } from './error-table';
export { errorTable, isErrorCode } from './error-table';
export type { CallContext } from './call-context';
export type { GrpcServerOptions } from './grpc-server';
export {
  bindServer,
  clientChannelOptions,
  createGrpcServer,
  keepaliveChannelOptions,
  shutdownServer,
} from './grpc-server';
export type { ClientStreamMethod, ServerStreamMethod, UnaryMethod } from './handlers';
export {
  bidiStreamHandler,
  clientStreamHandler,
  serverStreamHandler,
  unaryHandler,
} from './handlers';
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
export {
  masterClient,
  masterService,
  parameterServerClient,
  parameterServerService,
  replicationClient,
  replicationService,
  serviceNames,
} from './services';
export type { CallSettings } from './client-calls';
export { callClientStream, callUnary } from './client-calls';
export type { LinkedAbortController, SignalAndCleanup } from './abort-signals';
export {
  abortableSleep,
  createDeadlineSignal,
  createLinkedAbortController,
  onAbort,
} from './abort-signals';
export type { BackoffGrowth, BackoffJitter, BackoffPolicy } from './backoff';
export { backoffDelayMs } from './backoff';
export { backoffPolicies } from './backoff-policies';
export type { AttemptOutcome, RetryEvent, RetryOptions } from './retry';
export { retry, RetryDeadlineError } from './retry';
export { addReflection } from './reflection';
export { CallMetrics, callMetricsInterceptor } from './call-metrics';
export type { MetricsServer } from './metrics-server';
export { serveMetrics } from './metrics-server';
export type { Access, Role } from './security/access-policy';
export { accessTo, mayCall, roles } from './security/access-policy';
export type { AccessConfig } from './security/access-config';
export { AccessConfigError, loadAccessConfig, parseAccessConfig } from './security/access-config';
export type { Caller } from './security/authenticator';
export { Authenticator } from './security/authenticator';
export type { ServerSecurity } from './security/server-security';
export { isLoopback, loadServerSecurity, SecuritySettingsError } from './security/server-security';
export type { ClientSecurity, ClientSecurityFiles, ClientTls } from './security/client-security';
export { channelSecurity, loadClientSecurity } from './security/client-security';
export type { DirectCall } from './direct/direct-call';
export type { DirectMethod, DirectRoutes } from './direct/direct-routes';
export type { MessageSink } from './direct/message-framer';
export { WholeMessage } from './direct/message-framer';
export type { AccessCheck } from './security/access-interceptor';
export { parsed, UnparsableRequest } from './unparsable-request';
export { conventionalRegistry, optionalGauge } from './metric-conventions';
