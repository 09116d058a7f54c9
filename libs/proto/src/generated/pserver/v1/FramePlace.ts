// Original file: proto/pserver/v1/checkpoint.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A frame's place in the file.
 */
export interface FramePlace {
  /**
   * Byte offset of the frame's length prefix.
   */
  'offset'?: (number | string | Long);
  /**
   * Bytes of the frame, prefix included.
   */
  'length'?: (number | string | Long);
  /**
   * CRC-32C of those bytes, 4 bytes big-endian.
   */
  'checksum'?: (Buffer | Uint8Array | string);
}

/**
 * A frame's place in the file.
 */
export interface FramePlace__Output {
  /**
   * Byte offset of the frame's length prefix.
   */
  'offset': (number);
  /**
   * Bytes of the frame, prefix included.
   */
  'length': (number);
  /**
   * CRC-32C of those bytes, 4 bytes big-endian.
   */
  'checksum': (Buffer);
}
