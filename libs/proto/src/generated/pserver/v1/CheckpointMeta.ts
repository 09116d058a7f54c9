// Original file: proto/pserver/v1/checkpoint.proto

import type { ChecksumAlgorithm as _pserver_v1_ChecksumAlgorithm, ChecksumAlgorithm__Output as _pserver_v1_ChecksumAlgorithm__Output } from '../../pserver/v1/ChecksumAlgorithm';
import type { CheckpointFile as _pserver_v1_CheckpointFile, CheckpointFile__Output as _pserver_v1_CheckpointFile__Output } from '../../pserver/v1/CheckpointFile';
import type { FramePlace as _pserver_v1_FramePlace, FramePlace__Output as _pserver_v1_FramePlace__Output } from '../../pserver/v1/FramePlace';
import type { Long } from '@grpc/proto-loader';

/**
 * Names a committed checkpoint file and how to verify it: kept in the standalone manifest or in
 * etcd (`ckpt/<i>/latest`, `ckpt/<i>/hist/<n>`), as proto3 JSON.
 */
export interface CheckpointMeta {
  /**
   * A fresh UUID for each file.
   */
  'uuid'?: (string);
  /**
   * The file's path relative to the checkpoint directory, e.g. `shard-0/e7-s3-<uuid>.ckpt`.
   */
  'path'?: (string);
  /**
   * The file's size in bytes.
   */
  'size'?: (number | string | Long);
  /**
   * The algorithm of `checksum`.
   */
  'checksumAlgorithm'?: (_pserver_v1_ChecksumAlgorithm);
  /**
   * The checksum of the whole file, footer included (the footer's own checksum covers the bytes
   * before it, so a file can be checked without its meta; this one also covers the footer).
   */
  'checksum'?: (Buffer | Uint8Array | string);
  /**
   * When the snapshot was taken, in nanoseconds since the Unix epoch.
   */
  'timestampNs'?: (number | string | Long);
  /**
   * The writer's shard epoch.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * The shard's index.
   */
  'index'?: (number);
  /**
   * The checkpoint's sequence number within the shard epoch.
   */
  'seq'?: (number | string | Long);
  /**
   * The updates the shard had applied when the snapshot was taken.
   */
  'updatesApplied'?: (number | string | Long);
  /**
   * The file's format version.
   */
  'formatVersion'?: (number);
  /**
   * A delta's chain: the files it applies on, the full checkpoint first and its parent last.
   * Empty for a full checkpoint. Restoring reads them in order, then this file; retention keeps
   * every file a retained meta's chain names.
   */
  'chain'?: (_pserver_v1_CheckpointFile)[];
  /**
   * Where the file's CheckpointIndex frame is (files with tables).
   */
  'indexPlace'?: (_pserver_v1_FramePlace | null);
}

/**
 * Names a committed checkpoint file and how to verify it: kept in the standalone manifest or in
 * etcd (`ckpt/<i>/latest`, `ckpt/<i>/hist/<n>`), as proto3 JSON.
 */
export interface CheckpointMeta__Output {
  /**
   * A fresh UUID for each file.
   */
  'uuid': (string);
  /**
   * The file's path relative to the checkpoint directory, e.g. `shard-0/e7-s3-<uuid>.ckpt`.
   */
  'path': (string);
  /**
   * The file's size in bytes.
   */
  'size': (number);
  /**
   * The algorithm of `checksum`.
   */
  'checksumAlgorithm': (_pserver_v1_ChecksumAlgorithm__Output);
  /**
   * The checksum of the whole file, footer included (the footer's own checksum covers the bytes
   * before it, so a file can be checked without its meta; this one also covers the footer).
   */
  'checksum': (Buffer);
  /**
   * When the snapshot was taken, in nanoseconds since the Unix epoch.
   */
  'timestampNs': (number);
  /**
   * The writer's shard epoch.
   */
  'shardEpoch': (number);
  /**
   * The shard's index.
   */
  'index': (number);
  /**
   * The checkpoint's sequence number within the shard epoch.
   */
  'seq': (number);
  /**
   * The updates the shard had applied when the snapshot was taken.
   */
  'updatesApplied': (number);
  /**
   * The file's format version.
   */
  'formatVersion': (number);
  /**
   * A delta's chain: the files it applies on, the full checkpoint first and its parent last.
   * Empty for a full checkpoint. Restoring reads them in order, then this file; retention keeps
   * every file a retained meta's chain names.
   */
  'chain': (_pserver_v1_CheckpointFile__Output)[];
  /**
   * Where the file's CheckpointIndex frame is (files with tables).
   */
  'indexPlace': (_pserver_v1_FramePlace__Output | null);
}
