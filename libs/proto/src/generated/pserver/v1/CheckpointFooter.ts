// Original file: proto/pserver/v1/checkpoint.proto

import type { ChecksumAlgorithm as _pserver_v1_ChecksumAlgorithm, ChecksumAlgorithm__Output as _pserver_v1_ChecksumAlgorithm__Output } from '../../pserver/v1/ChecksumAlgorithm';
import type { Long } from '@grpc/proto-loader';

/**
 * Closes a file: written last.
 */
export interface CheckpointFooter {
  /**
   * The number of frames between the header and the footer.
   */
  'recordCount'?: (number | string | Long);
  /**
   * The algorithm of `checksum`.
   */
  'checksumAlgorithm'?: (_pserver_v1_ChecksumAlgorithm);
  /**
   * The checksum of every byte of the file before the footer frame's length prefix.
   */
  'checksum'?: (Buffer | Uint8Array | string);
}

/**
 * Closes a file: written last.
 */
export interface CheckpointFooter__Output {
  /**
   * The number of frames between the header and the footer.
   */
  'recordCount': (number);
  /**
   * The algorithm of `checksum`.
   */
  'checksumAlgorithm': (_pserver_v1_ChecksumAlgorithm__Output);
  /**
   * The checksum of every byte of the file before the footer frame's length prefix.
   */
  'checksum': (Buffer);
}
