export { enumType, messageType, packageDefinition } from './descriptor';
export type { ElementTypeName } from './element-type';
export { elementSizes, isElementTypeName } from './element-type';
export type { ClientErrorCodeName, ErrorCodeName, ServerErrorCodeName } from './error-codes';
export { isErrorCodeName } from './error-codes';
export type { ClientAction, ErrorCodeRule, StatusName } from './error-rules';
export { actionOf, clientActions, errorCodeRule } from './error-rules';
export * from './generated';
export { loaderOptions } from './loader-options';
export type { BlockPlacement } from './placement';
export {
  blockSeparator,
  defaultBlockSize,
  fnv1a64,
  invalidNameReason,
  jumpHash,
  maxNameBytes,
  parseBlockName,
  placeTensor,
  shardOf,
} from './placement';
export {
  bucketOfBigInt,
  bucketOfId,
  bucketsOfIds,
  checkTableBuckets,
  fmix32,
  maxTableBuckets,
  tableShardOf,
  tableShards,
} from './table-placement';
