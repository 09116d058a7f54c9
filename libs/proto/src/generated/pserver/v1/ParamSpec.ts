// Original file: proto/pserver/v1/parameter_server.proto

import type { ElementType as _pserver_v1_ElementType, ElementType__Output as _pserver_v1_ElementType__Output } from '../../pserver/v1/ElementType';
import type { OptimizerConfig as _pserver_v1_OptimizerConfig, OptimizerConfig__Output as _pserver_v1_OptimizerConfig__Output } from '../../pserver/v1/OptimizerConfig';
import type { Long } from '@grpc/proto-loader';

/**
 * One tensor or block as InitParam created it.
 */
export interface ParamSpec {
  /**
   * The tensor's or block's name (`<tensor>@<k>`).
   */
  'name'?: (string);
  /**
   * Its element type.
   */
  'elementType'?: (_pserver_v1_ElementType);
  /**
   * The whole tensor's shape, as given in InitParam (empty: a flat vector).
   */
  'shape'?: (number | string | Long)[];
  /**
   * Elements of this tensor or block.
   */
  'elements'?: (number | string | Long);
  /**
   * How gradients update it, with every default filled in (the learning rate included); unset
   * for stored-only tensors.
   */
  'optimizer'?: (_pserver_v1_OptimizerConfig | null);
}

/**
 * One tensor or block as InitParam created it.
 */
export interface ParamSpec__Output {
  /**
   * The tensor's or block's name (`<tensor>@<k>`).
   */
  'name': (string);
  /**
   * Its element type.
   */
  'elementType': (_pserver_v1_ElementType__Output);
  /**
   * The whole tensor's shape, as given in InitParam (empty: a flat vector).
   */
  'shape': (number)[];
  /**
   * Elements of this tensor or block.
   */
  'elements': (number);
  /**
   * How gradients update it, with every default filled in (the learning rate included); unset
   * for stored-only tensors.
   */
  'optimizer': (_pserver_v1_OptimizerConfig__Output | null);
}
