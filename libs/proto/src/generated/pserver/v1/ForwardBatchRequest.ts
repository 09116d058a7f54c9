// Original file: proto/pserver/v1/replication.proto

import type { ForwardRequest as _pserver_v1_ForwardRequest, ForwardRequest__Output as _pserver_v1_ForwardRequest__Output } from '../../pserver/v1/ForwardRequest';

/**
 * Forwards to one replica or receiver, in sequence order.
 */
export interface ForwardBatchRequest {
  /**
   * At least one; sequence numbers ascending.
   */
  'forwards'?: (_pserver_v1_ForwardRequest)[];
}

/**
 * Forwards to one replica or receiver, in sequence order.
 */
export interface ForwardBatchRequest__Output {
  /**
   * At least one; sequence numbers ascending.
   */
  'forwards': (_pserver_v1_ForwardRequest__Output)[];
}
