// Original file: proto/pserver/v1/replication.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A piece of the copy. The first piece carries the copy's facts; the pieces' `data`, concatenated,
 * are the checkpoint file.
 */
export interface SnapshotChunk {
  /**
   * The primary's sequence number the copy was taken at (first piece only): the replica applies
   * forwarded pushes from the next one on.
   */
  'seq'?: (number | string | Long);
  /**
   * The file's CheckpointMeta as proto3 JSON (first piece only): its size, checksum and index,
   * to verify and read it as a checkpoint.
   */
  'metaJson'?: (string);
  /**
   * The next bytes of the file.
   */
  'data'?: (Buffer | Uint8Array | string);
}

/**
 * A piece of the copy. The first piece carries the copy's facts; the pieces' `data`, concatenated,
 * are the checkpoint file.
 */
export interface SnapshotChunk__Output {
  /**
   * The primary's sequence number the copy was taken at (first piece only): the replica applies
   * forwarded pushes from the next one on.
   */
  'seq': (number);
  /**
   * The file's CheckpointMeta as proto3 JSON (first piece only): its size, checksum and index,
   * to verify and read it as a checkpoint.
   */
  'metaJson': (string);
  /**
   * The next bytes of the file.
   */
  'data': (Buffer);
}
