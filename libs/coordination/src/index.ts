export type { PlannedAssignment, PlannedReplica } from './assignment';
export {
  assign,
  assignReplica,
  isCurrentAssignment,
  planAssignments,
  planReplicas,
  retire,
  sparesOf,
  staleAssignments,
} from './assignment';
export type { ClusterMemberOptions, TakenRole } from './cluster-member';
export { ClusterMember, type LiveMove } from './cluster-member';
export type { DatasetStoreOptions, StoredDataset } from './dataset-store';
export { DatasetStore, defaultDatasetStoreOptions } from './dataset-store';
export type { Leader } from './election';
export { LeaderElection, leaderOf } from './election';
export type { CoordinationErrorCode } from './errors';
export { CoordinationError } from './errors';
export type { JobConsistency } from './consistency';
export {
  asynchronous,
  consistencyFromStored,
  consistencyMessage,
  describeConsistency,
  parseConsistency,
} from './consistency';
export type { EtcdOptions } from './etcd';
export { connectEtcd, defaultEtcdOptions, openEtcd } from './etcd';
export type { EtcdCheckOptions, EtcdConnectionErrorCode } from './etcd-check';
export { checkEtcd, EtcdConnectionError } from './etcd-check';
export { EtcdMetaStore } from './etcd-meta-store';
export { EtcdShardTenure } from './etcd-shard-tenure';
export type {
  AssignmentValue,
  JobState,
  JobWatcherOptions,
  MemberValue,
  RegisteredPserver,
  ReplicaAssignment,
  ReplicaValue,
  ShardAssignment,
} from './job-state';
export { JobWatcher, readJobState } from './job-state';
export { jobFinished, pserversLeft } from './job-finish';
export { JobKeys } from './keys';
export type { LeaseKeeperOptions } from './lease-keeper';
export { LeaseKeeper } from './lease-keeper';
export type { FinalSeq, MoveDecision, MoveReceiverValue } from './live-move';
export type { InitDecision } from './master-term';
export { MasterTerm } from './master-term';
export type { TermWrites } from './master-reshape';
export { completeLiveReshape, finishReshape, rollBackLiveReshape } from './master-reshape';
export type { PendingReshape } from './reshape';
export { encodeReshape, parseReshape, unrestoredIndices } from './reshape';
export type { CompleteAssignment, MemberRole } from './membership';
export { PserverMembership } from './membership';
export { ReplicaTenure } from './replica-tenure';
export type { Reshape, ShardTenure, TenureFacts } from './shard-tenure';
export { TenureBase, TenureLostError } from './shard-tenure';
export { StandaloneTenure } from './standalone-tenure';
export { TrainerRoster } from './trainer-roster';
export type { TrainerSession } from './trainer-sessions';
export { TrainerSessions } from './trainer-sessions';
/** The etcd client type, for code that passes a client along without importing etcd3. */
export type { Etcd3 as EtcdClient } from 'etcd3';
