// Original file: proto/pserver/v1/tensor.proto

import type { ElementType as _pserver_v1_ElementType, ElementType__Output as _pserver_v1_ElementType__Output } from '../../pserver/v1/ElementType';
import type { Long } from '@grpc/proto-loader';

/**
 * A tensor, or one block of a tensor, as it travels and as it is stored. Never `repeated float`:
 * encoding a packed float field costs about 17 times more than copying bytes.
 */
export interface Tensor {
  /**
   * The tensor's name, or a block's name `<tensor>@<k>` (block k of a tensor larger than the
   * job's block size; see the placement rule in proto/README.md). Non-empty UTF-8 of at most 1024
   * bytes; a tensor's own name never contains `@`.
   */
  'name'?: (string);
  /**
   * The type of every element of `content`.
   */
  'elementType'?: (_pserver_v1_ElementType);
  /**
   * The shape of the whole tensor, row-major, outermost dimension first. Optional: empty means
   * "a flat vector". For a block it is still the whole tensor's shape, kept so that a checkpoint
   * can be exported as whole tensors.
   */
  'shape'?: (number | string | Long)[];
  /**
   * The elements, flattened row-major, each in little-endian byte order. Its length is a
   * multiple of the element size.
   */
  'content'?: (Buffer | Uint8Array | string);
}

/**
 * A tensor, or one block of a tensor, as it travels and as it is stored. Never `repeated float`:
 * encoding a packed float field costs about 17 times more than copying bytes.
 */
export interface Tensor__Output {
  /**
   * The tensor's name, or a block's name `<tensor>@<k>` (block k of a tensor larger than the
   * job's block size; see the placement rule in proto/README.md). Non-empty UTF-8 of at most 1024
   * bytes; a tensor's own name never contains `@`.
   */
  'name': (string);
  /**
   * The type of every element of `content`.
   */
  'elementType': (_pserver_v1_ElementType__Output);
  /**
   * The shape of the whole tensor, row-major, outermost dimension first. Optional: empty means
   * "a flat vector". For a block it is still the whole tensor's shape, kept so that a checkpoint
   * can be exported as whole tensors.
   */
  'shape': (number)[];
  /**
   * The elements, flattened row-major, each in little-endian byte order. Its length is a
   * multiple of the element size.
   */
  'content': (Buffer);
}
