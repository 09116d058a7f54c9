export type { ConnectOptions, InitialTensor } from './client';
export { connect, PserverClient } from './client';
export type { ClientErrorCode } from './errors';
export { ClientError, isStaleView } from './errors';
export type { TestHooks } from './step-context';
export { StepContext } from './step-context';
export type { TensorArray, TensorArrayType, TensorSpec } from './tensors';
export type { ShardRoute, View } from './view';
export { RpcError } from '@pserver/rpc';
