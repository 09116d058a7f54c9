export type { SentRequest } from './answers';
export { parses, undocumentedAnswer } from './answers';
export type { FuzzReport, FuzzRunOptions, FuzzSubject, RpcTarget, Sent } from './fuzz-rpc';
export { describeReport, fuzzRpc, residentBytes, unaryTarget } from './fuzz-rpc';
export type { DatasetFavorites, MasterFuzzModel, PendingTask } from './master-requests';
export { masterTargets, Ref, resolveRefs } from './master-requests';
export type { MasterState } from './master-subject';
export { MasterFuzzSubject } from './master-subject';
export type { HeldTable, HeldTensor, PserverFuzzModel, StreamInput } from './pserver-requests';
export {
  elementTypeNumber,
  emptyRequestTarget,
  finishInitParamsTarget,
  getParamsTarget,
  getRowsTarget,
  initParamTarget,
  initTableTarget,
  listParamsTarget,
  sendGradsStreamTarget,
  sendGradsTarget,
} from './pserver-requests';
export { replicationTargets } from './replication-requests';
export type { PserverState } from './pserver-subject';
export { PserverFuzzSubject } from './pserver-subject';
export type { RawAnswer } from './raw-client';
export { RawGrpcClient } from './raw-client';
export type { FuzzSettings } from './settings';
export { defaultFuzzSettings, fuzzSettings } from './settings';
export {
  anyDouble,
  enumValue,
  extremeUint32s,
  extremeUint64s,
  repeated,
  text,
  uint32,
  uint64,
} from './values';
export type { Fill, FuzzInput, Mutation } from './wire';
export {
  Content,
  decodeMessage,
  encodeMessage,
  fills,
  fuzzInputs,
  inputBytes,
  mutate,
  mutations,
  oddEncodings,
  prng,
  Repeated,
  RepeatedList,
  toWire,
} from './wire';
