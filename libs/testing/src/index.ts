// The test harness: the process, etcd and cluster helpers of @pserver/local-cluster, plus
// drivers that talk to servers the way tests need to.
export * from '@pserver/local-cluster';
export type { PserverDriverOptions } from './pserver-driver';
export {
  bytesOf,
  defaultPserverDriverOptions,
  float32s,
  float64s,
  PserverDriver,
} from './pserver-driver';
export { MasterDriver } from './master-driver';
export type {
  DatasetFavorites,
  FuzzReport,
  FuzzSettings,
  FuzzSubject,
  HeldTable,
  HeldTensor,
  MasterFuzzModel,
  MasterState,
  PserverFuzzModel,
  PserverState,
  RawAnswer,
  RpcTarget,
} from './fuzz';
export {
  describeReport,
  elementTypeNumber,
  emptyRequestTarget,
  finishInitParamsTarget,
  fuzzRpc,
  fuzzSettings,
  getParamsTarget,
  getRowsTarget,
  initTableTarget,
  initParamTarget,
  listParamsTarget,
  masterTargets,
  MasterFuzzSubject,
  PserverFuzzSubject,
  RawGrpcClient,
  replicationTargets,
  residentBytes,
  sendGradsStreamTarget,
  sendGradsTarget,
  undocumentedAnswer,
} from './fuzz';
export { bytesAsHex } from './bytes-as-hex';
export type { ScenarioCoverage } from './scenario-coverage';
export { scenarioCoverage, scenarioNames } from './scenario-coverage';
export type { SharedFlagVector } from './shared-flag-vectors';
export { sharedFlagVectors } from './shared-flag-vectors';
export * from './ledger';
