// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * How far one replica of a primary is.
 */
export interface ReplicaProgress {
  /**
   * The replica's member name.
   */
  'member'?: (string);
  /**
   * The last push it acknowledged: the primary's applied_seq minus this is its lag.
   */
  'ackedSeq'?: (number | string | Long);
  /**
   * Whether it holds every push the primary acknowledged (promotable).
   */
  'inSync'?: (boolean);
}

/**
 * How far one replica of a primary is.
 */
export interface ReplicaProgress__Output {
  /**
   * The replica's member name.
   */
  'member': (string);
  /**
   * The last push it acknowledged: the primary's applied_seq minus this is its lag.
   */
  'ackedSeq': (number);
  /**
   * Whether it holds every push the primary acknowledged (promotable).
   */
  'inSync': (boolean);
}
