// Original file: proto/pserver/v1/checkpoint.proto

import type { FramePlace as _pserver_v1_FramePlace, FramePlace__Output as _pserver_v1_FramePlace__Output } from '../../pserver/v1/FramePlace';
import type { Long } from '@grpc/proto-loader';

/**
 * A row section's place and buckets.
 */
export interface SectionPlace {
  /**
   * The frame.
   */
  'frame'?: (_pserver_v1_FramePlace | null);
  /**
   * The bucket of its first row.
   */
  'firstBucket'?: (number);
  /**
   * The bucket of its last row.
   */
  'lastBucket'?: (number);
  /**
   * Its rows.
   */
  'rows'?: (number | string | Long);
}

/**
 * A row section's place and buckets.
 */
export interface SectionPlace__Output {
  /**
   * The frame.
   */
  'frame': (_pserver_v1_FramePlace__Output | null);
  /**
   * The bucket of its first row.
   */
  'firstBucket': (number);
  /**
   * The bucket of its last row.
   */
  'lastBucket': (number);
  /**
   * Its rows.
   */
  'rows': (number);
}
