// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * SetDataset's reply.
 */
export interface SetDatasetResponse {
  /**
   * The number of tasks per pass.
   */
  'tasks'?: (number | string | Long);
  /**
   * True when this exact dataset had been set before (the call changed nothing).
   */
  'alreadySet'?: (boolean);
}

/**
 * SetDataset's reply.
 */
export interface SetDatasetResponse__Output {
  /**
   * The number of tasks per pass.
   */
  'tasks': (number);
  /**
   * True when this exact dataset had been set before (the call changed nothing).
   */
  'alreadySet': (boolean);
}
