// Original file: proto/pserver/v1/checkpoint.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A file of a delta's chain: enough to find and verify it.
 */
export interface CheckpointFile {
  /**
   * The checkpoint's UUID (its header's).
   */
  'uuid'?: (string);
  /**
   * Relative to the checkpoint directory.
   */
  'path'?: (string);
  /**
   * Its size in bytes.
   */
  'size'?: (number | string | Long);
  /**
   * Its whole-file checksum, in the meta's algorithm.
   */
  'checksum'?: (Buffer | Uint8Array | string);
}

/**
 * A file of a delta's chain: enough to find and verify it.
 */
export interface CheckpointFile__Output {
  /**
   * The checkpoint's UUID (its header's).
   */
  'uuid': (string);
  /**
   * Relative to the checkpoint directory.
   */
  'path': (string);
  /**
   * Its size in bytes.
   */
  'size': (number);
  /**
   * Its whole-file checksum, in the meta's algorithm.
   */
  'checksum': (Buffer);
}
