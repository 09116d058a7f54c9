// Original file: proto/pserver/v1/table.proto

import type { Long } from '@grpc/proto-loader';

/**
 * What a push did to one table.
 */
export interface SparseOutcome {
  /**
   * The table.
   */
  'table'?: (string);
  /**
   * Rows updated (after merging duplicates), created rows included.
   */
  'rowsUpdated'?: (number | string | Long);
  /**
   * Rows created by this push.
   */
  'rowsCreated'?: (number | string | Long);
  /**
   * Ids not admitted: their gradients were dropped.
   */
  'rowsRejected'?: (number | string | Long);
}

/**
 * What a push did to one table.
 */
export interface SparseOutcome__Output {
  /**
   * The table.
   */
  'table': (string);
  /**
   * Rows updated (after merging duplicates), created rows included.
   */
  'rowsUpdated': (number);
  /**
   * Rows created by this push.
   */
  'rowsCreated': (number);
  /**
   * Ids not admitted: their gradients were dropped.
   */
  'rowsRejected': (number);
}
