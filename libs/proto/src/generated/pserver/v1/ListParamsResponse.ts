// Original file: proto/pserver/v1/parameter_server.proto

import type { ParamSpec as _pserver_v1_ParamSpec, ParamSpec__Output as _pserver_v1_ParamSpec__Output } from '../../pserver/v1/ParamSpec';
import type { TableSpec as _pserver_v1_TableSpec, TableSpec__Output as _pserver_v1_TableSpec__Output } from '../../pserver/v1/TableSpec';
import type { Long } from '@grpc/proto-loader';

/**
 * ListParams's reply.
 */
export interface ListParamsResponse {
  /**
   * The shard's epoch.
   */
  'shardEpoch'?: (number | string | Long);
  /**
   * Every tensor and block the shard holds, by name.
   */
  'params'?: (_pserver_v1_ParamSpec)[];
  /**
   * Every table the shard holds buckets of, as InitTable gave it with defaults filled in.
   */
  'tables'?: (_pserver_v1_TableSpec)[];
}

/**
 * ListParams's reply.
 */
export interface ListParamsResponse__Output {
  /**
   * The shard's epoch.
   */
  'shardEpoch': (number);
  /**
   * Every tensor and block the shard holds, by name.
   */
  'params': (_pserver_v1_ParamSpec__Output)[];
  /**
   * Every table the shard holds buckets of, as InitTable gave it with defaults filled in.
   */
  'tables': (_pserver_v1_TableSpec__Output)[];
}
