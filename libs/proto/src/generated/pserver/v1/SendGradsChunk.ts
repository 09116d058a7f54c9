// Original file: proto/pserver/v1/parameter_server.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';
import type { GradientChunk as _pserver_v1_GradientChunk, GradientChunk__Output as _pserver_v1_GradientChunk__Output } from '../../pserver/v1/GradientChunk';
import type { SparseGrad as _pserver_v1_SparseGrad, SparseGrad__Output as _pserver_v1_SparseGrad__Output } from '../../pserver/v1/SparseGrad';
import type { Long } from '@grpc/proto-loader';

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
  /**
   * Slices of row gradients: a table's ids, grads and counts may be split over several slices
   * (each whole rows) in any messages; the push holds their concatenation.
   */
  'sparse'?: (_pserver_v1_SparseGrad)[];
  /**
   * As SendGradsRequest.sample_count; read from the first message only.
   */
  'sampleCount'?: (number | string | Long);
  '_sampleCount'?: "sampleCount";
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
  /**
   * Slices of row gradients: a table's ids, grads and counts may be split over several slices
   * (each whole rows) in any messages; the push holds their concatenation.
   */
  'sparse': (_pserver_v1_SparseGrad__Output)[];
  /**
   * As SendGradsRequest.sample_count; read from the first message only.
   */
  'sampleCount'?: (number);
  '_sampleCount'?: "sampleCount";
}
