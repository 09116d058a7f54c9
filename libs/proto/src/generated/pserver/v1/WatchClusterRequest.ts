// Original file: proto/pserver/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Watches the cluster view.
 */
export interface WatchClusterRequest {
  /**
   * Send the first view only once its revision is above this one (0: send the current view at
   * once).
   */
  'afterRevision'?: (number | string | Long);
}

/**
 * Watches the cluster view.
 */
export interface WatchClusterRequest__Output {
  /**
   * Send the first view only once its revision is above this one (0: send the current view at
   * once).
   */
  'afterRevision': (number);
}
