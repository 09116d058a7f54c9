// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Requests the shard's status.
 */
export interface GetShardStatusRequest {
  /**
   * Optional: with a trainer id, the reply says that trainer's last step on this shard (how a
   * restarted trainer of a fixed roster learns where it was).
   */
  'context'?: (_pserver_v1_RequestContext | null);
}

/**
 * Requests the shard's status.
 */
export interface GetShardStatusRequest__Output {
  /**
   * Optional: with a trainer id, the reply says that trainer's last step on this shard (how a
   * restarted trainer of a fixed roster learns where it was).
   */
  'context': (_pserver_v1_RequestContext__Output | null);
}
