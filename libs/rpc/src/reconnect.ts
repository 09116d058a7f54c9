import type { ChannelOptions } from '@grpc/grpc-js';

/**
 * How soon a client channel dials again after its server went away. grpc-js waits 1 s, then
 * 1.6× more each time, up to 120 s: a trainer whose pserver, master or etcd was down for a while
 * then kept failing for up to two minutes after the server listened again. From 200 ms up to 1 s,
 * a client notices a server that is back within about a second; a dead address costs at most one
 * connection attempt per second per channel.
 */
export const reconnectOptions: ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 1_000,
};
