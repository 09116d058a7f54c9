// Original file: proto/pserver/v1/parameter_server.proto

import type { ElementType as _pserver_v1_ElementType, ElementType__Output as _pserver_v1_ElementType__Output } from '../../pserver/v1/ElementType';
import type { Long } from '@grpc/proto-loader';

/**
 * A contiguous piece of one gradient. The pieces of a gradient arrive in order, from offset 0,
 * without gaps; the gradient is complete when their bytes add up to the parameter's length.
 */
export interface GradientChunk {
  /**
   * The parameter's name.
   */
  'name'?: (string);
  /**
   * The parameter's element type.
   */
  'elementType'?: (_pserver_v1_ElementType);
  /**
   * The byte offset of `content` in the gradient.
   */
  'offset'?: (number | string | Long);
  /**
   * The bytes, little-endian.
   */
  'content'?: (Buffer | Uint8Array | string);
  /**
   * The whole tensor's shape, checked as SendGradsRequest.grads' shape; read from the chunk at
   * offset 0 only.
   */
  'shape'?: (number | string | Long)[];
}

/**
 * A contiguous piece of one gradient. The pieces of a gradient arrive in order, from offset 0,
 * without gaps; the gradient is complete when their bytes add up to the parameter's length.
 */
export interface GradientChunk__Output {
  /**
   * The parameter's name.
   */
  'name': (string);
  /**
   * The parameter's element type.
   */
  'elementType': (_pserver_v1_ElementType__Output);
  /**
   * The byte offset of `content` in the gradient.
   */
  'offset': (number);
  /**
   * The bytes, little-endian.
   */
  'content': (Buffer);
  /**
   * The whole tensor's shape, checked as SendGradsRequest.grads' shape; read from the chunk at
   * offset 0 only.
   */
  'shape': (number)[];
}
