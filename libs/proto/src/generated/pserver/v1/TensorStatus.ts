// Original file: proto/pserver/v1/parameter_server.proto

import type { ElementType as _pserver_v1_ElementType, ElementType__Output as _pserver_v1_ElementType__Output } from '../../pserver/v1/ElementType';
import type { Long } from '@grpc/proto-loader';

/**
 * One tensor or block held by a shard.
 */
export interface TensorStatus {
  /**
   * Its name.
   */
  'name'?: (string);
  /**
   * Its element type.
   */
  'elementType'?: (_pserver_v1_ElementType);
  /**
   * The whole tensor's shape, as given in InitParam.
   */
  'shape'?: (number | string | Long)[];
  /**
   * Its number of elements.
   */
  'elements'?: (number | string | Long);
  /**
   * Its content's size in bytes.
   */
  'bytes'?: (number | string | Long);
  /**
   * Updates applied to it (t).
   */
  'updates'?: (number | string | Long);
  /**
   * The update rule ("sgd", "adam", …), or "none" for stored-only tensors.
   */
  'optimizer'?: (string);
}

/**
 * One tensor or block held by a shard.
 */
export interface TensorStatus__Output {
  /**
   * Its name.
   */
  'name': (string);
  /**
   * Its element type.
   */
  'elementType': (_pserver_v1_ElementType__Output);
  /**
   * The whole tensor's shape, as given in InitParam.
   */
  'shape': (number)[];
  /**
   * Its number of elements.
   */
  'elements': (number);
  /**
   * Its content's size in bytes.
   */
  'bytes': (number);
  /**
   * Updates applied to it (t).
   */
  'updates': (number);
  /**
   * The update rule ("sgd", "adam", …), or "none" for stored-only tensors.
   */
  'optimizer': (string);
}
