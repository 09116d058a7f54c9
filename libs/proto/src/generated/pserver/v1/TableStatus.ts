// Original file: proto/pserver/v1/parameter_server.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One table's part on a shard.
 */
export interface TableStatus {
  /**
   * Its name.
   */
  'name'?: (string);
  /**
   * Values per row.
   */
  'dim'?: (number);
  /**
   * Rows held now.
   */
  'rows'?: (number | string | Long);
  /**
   * Bytes per row, optimizer state and metadata included.
   */
  'bytesPerRow'?: (number | string | Long);
  /**
   * Pushes that updated it (its step).
   */
  'step'?: (number | string | Long);
  /**
   * Rows created since the process started.
   */
  'rowsCreated'?: (number | string | Long);
  /**
   * Ids not admitted since the process started.
   */
  'rowsRejected'?: (number | string | Long);
  /**
   * Rows evicted since the process started.
   */
  'rowsEvicted'?: (number | string | Long);
  /**
   * The update rule ("sgd", "adagrad", "rowwise_adagrad", "adam").
   */
  'optimizer'?: (string);
}

/**
 * One table's part on a shard.
 */
export interface TableStatus__Output {
  /**
   * Its name.
   */
  'name': (string);
  /**
   * Values per row.
   */
  'dim': (number);
  /**
   * Rows held now.
   */
  'rows': (number);
  /**
   * Bytes per row, optimizer state and metadata included.
   */
  'bytesPerRow': (number);
  /**
   * Pushes that updated it (its step).
   */
  'step': (number);
  /**
   * Rows created since the process started.
   */
  'rowsCreated': (number);
  /**
   * Ids not admitted since the process started.
   */
  'rowsRejected': (number);
  /**
   * Rows evicted since the process started.
   */
  'rowsEvicted': (number);
  /**
   * The update rule ("sgd", "adagrad", "rowwise_adagrad", "adam").
   */
  'optimizer': (string);
}
