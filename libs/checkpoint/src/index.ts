export type {
  DirectoriesCheck,
  DirectoryStats,
  DirectoryVerdict,
  ProcessIdentity,
} from './directory-check';
export {
  checkCheckpointDirectories,
  currentIdentity,
  judgeCheckpointDirectory,
} from './directory-check';
export type { BucketPart } from './bucket-reader';
export { readTableBucket } from './bucket-reader';
export type { ChainPosition, ChainVisitor } from './chain';
export { ChainFileError, readCheckpointChain } from './chain';
export type { CheckpointErrorCode } from './errors';
export { CheckpointError } from './errors';
export { checkpointPath, markBroken, removeLeftoverTemporaries, removeUnreferenced } from './files';
export {
  checksumAlgorithm,
  formatVersion,
  formatVersionWithoutTables,
  formatVersionWithTables,
} from './format';
export { fsyncDirectory, writeFileAtomic } from './fs-sync';
export type { JobDigest, ShardCheckpoint } from './job-digest';
export { digestJobState, jobDigestVersion } from './job-digest';
export type { MetaStore } from './manifest-store';
export { ManifestStore, shardDirectory } from './manifest-store';
export type { ChainFile, CheckpointMeta, FramePlace } from './meta';
export { chainOf, checkpointMeta, metaFromJson, metaToJson } from './meta';
export type {
  CheckpointHeader,
  CheckpointVisitor,
  ExpectedFile,
  ReadOptions,
  ReadResult,
} from './reader';
export { readCheckpointFile } from './reader';
export type { TableDigest } from './table-digest';
export type { ShardShare, ShareFilter } from './share-reader';
export { readShardShare } from './share-reader';
export type { ShareRows, ShareTable } from './share-tables';
export type { ShardSnapshot, StepMarkSnapshot, TableSnapshot, TensorSnapshot } from './snapshot';
export { SnapshotBuffers, SnapshotPools } from './snapshot-buffers';
export { nowUnixNs } from './snapshot';
export type { WritePoint, WritePointHook } from './write-points';
export { isWritePoint, writePoints } from './write-points';
export type { WriteOptions, WrittenFile } from './writer';
export { writeCheckpointFile } from './writer';
