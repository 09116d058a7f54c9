export type { ConnectOptions, InitialTensor, InitOptions } from './client';
export type { DatasetTask } from './dataset-tasks';
export { readRecords } from './dataset-tasks';
export { connect, PserverClient } from './client';
export type { ClientErrorCode } from './errors';
export {
  clientActionOf,
  ClientError,
  clientErrorCodes,
  isRefused,
  isResendStep,
  isRetryable,
  isShardUnavailable,
  isStale,
} from './errors';
export type { ListedParam } from './model-listing';
export type { Gradient, PushOptions, PushReport, StepIdentity, TestHooks } from './step-context';
export { StepContext } from './step-context';
export type { TableInit, TableLayout } from './tables';
export { defaultTableBuckets } from './tables';
export type { TensorArray, TensorArrayType, TensorSpec } from './tensors';
export { BFloat16Bits, Float16Bits } from './tensors';
export type { ConsistencyModeName, ShardRoute, View } from './view';
export type { ClientAction } from '@pserver/proto';
export type { ClientSecurity, ClientSecurityFiles, ClientTls } from '@pserver/rpc';
export { loadClientSecurity, RpcError } from '@pserver/rpc';
