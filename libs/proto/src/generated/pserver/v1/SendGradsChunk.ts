// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';
import type { GradientChunk as _pserver_v1_GradientChunk, GradientChunk__Output as _pserver_v1_GradientChunk__Output } from '../../pserver/v1/GradientChunk';

/**
 * One message of a streamed push.
 */
export interface SendGradsChunk {
  /**
   * Required in the first message of the stream, ignored in the others.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * Pieces of gradients.
   */
  'grads'?: (_pserver_v1_GradientChunk)[];
}

/**
 * One message of a streamed push.
 */
export interface SendGradsChunk__Output {
  /**
   * Required in the first message of the stream, ignored in the others.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * Pieces of gradients.
   */
  'grads': (_pserver_v1_GradientChunk__Output)[];
}
