// Original file: proto/pserver/v1/checkpoint.proto

import type { FramePlace as _pserver_v1_FramePlace, FramePlace__Output as _pserver_v1_FramePlace__Output } from '../../pserver/v1/FramePlace';
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
  /**
   * Where its CheckpointIndex frame is (files with tables).
   */
  'indexPlace'?: (_pserver_v1_FramePlace | null);
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
  /**
   * Where its CheckpointIndex frame is (files with tables).
   */
  'indexPlace': (_pserver_v1_FramePlace__Output | null);
}
