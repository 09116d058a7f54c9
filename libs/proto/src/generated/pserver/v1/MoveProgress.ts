// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * How far one receiver of a live move is with the slices it takes from this shard.
 */
export interface MoveProgress {
  /**
   * The receiver's member name.
   */
  'member'?: (string);
  /**
   * The index of the new count it receives.
   */
  'index'?: (number);
  /**
   * The new count.
   */
  'shardCount'?: (number);
  /**
   * The size of its copy (0 until the copy is written).
   */
  'copyBytes'?: (number | string | Long);
  /**
   * The bytes of its copy sent so far.
   */
  'sentBytes'?: (number | string | Long);
  /**
   * Whether it loaded its copy.
   */
  'loaded'?: (boolean);
  /**
   * The last push it applied: the primary's applied_seq minus this is its lag.
   */
  'ackedSeq'?: (number | string | Long);
}

/**
 * How far one receiver of a live move is with the slices it takes from this shard.
 */
export interface MoveProgress__Output {
  /**
   * The receiver's member name.
   */
  'member': (string);
  /**
   * The index of the new count it receives.
   */
  'index': (number);
  /**
   * The new count.
   */
  'shardCount': (number);
  /**
   * The size of its copy (0 until the copy is written).
   */
  'copyBytes': (number);
  /**
   * The bytes of its copy sent so far.
   */
  'sentBytes': (number);
  /**
   * Whether it loaded its copy.
   */
  'loaded': (boolean);
  /**
   * The last push it applied: the primary's applied_seq minus this is its lag.
   */
  'ackedSeq': (number);
}
