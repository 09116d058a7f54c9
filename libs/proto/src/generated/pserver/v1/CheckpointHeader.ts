// Original file: proto/pserver/v1/checkpoint.proto

import type { Long } from '@grpc/proto-loader';

/**
 * What a file is: written first.
 */
export interface CheckpointHeader {
  /**
   * The file format's version. Readers read every older version. 1: tensors and step marks;
   * 2: also tables (written only by shards holding a table, so older readers still read the
   * files of shards without one); 3: a delta (`parent_uuid` set), whose tables hold only the
   * rows changed and the ids evicted since its parent (a reader of version 2 refuses it rather
   * than take a delta for a whole shard).
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
  /**
   * The checkpoint's UUID (the one in its meta and its file name).
   */
  'uuid'?: (string);
  /**
   * A delta: the UUID of the checkpoint it applies on (a full one or another delta). Empty for
   * a full checkpoint. A delta holds every tensor and the step marks whole, and of each table
   * its spec and state whole but only the rows pushed and the ids evicted since the parent.
   */
  'parentUuid'?: (string);
}

/**
 * What a file is: written first.
 */
export interface CheckpointHeader__Output {
  /**
   * The file format's version. Readers read every older version. 1: tensors and step marks;
   * 2: also tables (written only by shards holding a table, so older readers still read the
   * files of shards without one); 3: a delta (`parent_uuid` set), whose tables hold only the
   * rows changed and the ids evicted since its parent (a reader of version 2 refuses it rather
   * than take a delta for a whole shard).
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
  /**
   * The checkpoint's UUID (the one in its meta and its file name).
   */
  'uuid': (string);
  /**
   * A delta: the UUID of the checkpoint it applies on (a full one or another delta). Empty for
   * a full checkpoint. A delta holds every tensor and the step marks whole, and of each table
   * its spec and state whole but only the rows pushed and the ids evicted since the parent.
   */
  'parentUuid': (string);
}
