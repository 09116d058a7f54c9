// Original file: proto/pserver/v1/checkpoint.proto

import type { Long } from '@grpc/proto-loader';

/**
 * What a file is: written first.
 */
export interface CheckpointHeader {
  /**
   * The file format's version. Readers read every older version. 1: tensors and step marks;
   * 2: also tables (written only by shards holding a table, so older readers still read the
   * files of shards without one).
   */
  'formatVersion'?: (number);
  /**
   * The shard's index.
   */
  'shardIndex'?: (number);
  /**
   * The job's shard count when the file was written.
   */
  'shardCount'?: (number);
  /**
   * The writer's shard epoch.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * When the snapshot was taken, in nanoseconds since the Unix epoch.
   */
  'createdUnixNs'?: (number | string | Long);
  /**
   * The job's block size in elements, so blocks can be reassembled into tensors.
   */
  'blockSize'?: (number | string | Long);
  /**
   * The job's name ("" in standalone mode).
   */
  'job'?: (string);
  /**
   * The checkpoint's sequence number within the shard epoch, from 1.
   */
  'seq'?: (number | string | Long);
}

/**
 * What a file is: written first.
 */
export interface CheckpointHeader__Output {
  /**
   * The file format's version. Readers read every older version. 1: tensors and step marks;
   * 2: also tables (written only by shards holding a table, so older readers still read the
   * files of shards without one).
   */
  'formatVersion': (number);
  /**
   * The shard's index.
   */
  'shardIndex': (number);
  /**
   * The job's shard count when the file was written.
   */
  'shardCount': (number);
  /**
   * The writer's shard epoch.
   */
  'shardEpoch': (number);
  /**
   * When the snapshot was taken, in nanoseconds since the Unix epoch.
   */
  'createdUnixNs': (number);
  /**
   * The job's block size in elements, so blocks can be reassembled into tensors.
   */
  'blockSize': (number);
  /**
   * The job's name ("" in standalone mode).
   */
  'job': (string);
  /**
   * The checkpoint's sequence number within the shard epoch, from 1.
   */
  'seq': (number);
}
