// Original file: proto/pserver/v1/parameter_server.proto

import type { CheckpointMeta as _pserver_v1_CheckpointMeta, CheckpointMeta__Output as _pserver_v1_CheckpointMeta__Output } from '../../pserver/v1/CheckpointMeta';

/**
 * SaveCheckpoint's reply.
 */
export interface SaveCheckpointResponse {
  /**
   * The committed checkpoint.
   */
  'meta'?: (_pserver_v1_CheckpointMeta | null);
}

/**
 * SaveCheckpoint's reply.
 */
export interface SaveCheckpointResponse__Output {
  /**
   * The committed checkpoint.
   */
  'meta': (_pserver_v1_CheckpointMeta__Output | null);
}
