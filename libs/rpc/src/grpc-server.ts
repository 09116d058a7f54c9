import type http2 from 'node:http2';
import {
  Server,
  ServerCredentials,
  type ChannelOptions,
  type ServerInterceptor,
} from '@grpc/grpc-js';
import { routeDirectCalls, type DirectRoutes } from './direct/direct-routes';

/**
 * Binds `server` to `host:port` (port 0 picks a free one) and resolves with the bound port.
 * `bindAsync` starts serving by itself; the deprecated `server.start()` is never called.
 */
export function bindServer(
  server: Server,
  host: string,
  port: number,
  credentials: ServerCredentials = ServerCredentials.createInsecure(),
): Promise<number> {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, boundPort) =>
      err ? reject(err) : resolve(boundPort),
    );
  });
}

/**
 * Lets in-flight calls finish for up to `graceMs`, then cancels whatever is still running.
 * Resolves `true` when the graceful path sufficed.
 */
export function shutdownServer(server: Server, graceMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve(false);
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export interface GrpcServerOptions {
  /** The largest message received or sent. */
  maxMessageBytes: number;
  /**
   * HTTP/2 receive window of each connection and stream. Node's default of 64 KiB caps a large
   * upload at about 0.3 GB/s on loopback (and at window/RTT on a network).
   */
  flowControlWindowBytes: number;
  /** Run around every call grpc-js serves, e.g. `callMetricsInterceptor`. */
  interceptors?: ServerInterceptor[];
  /**
   * Methods served straight on HTTP/2 rather than by grpc-js (the data path: no message
   * reassembly, no per-call objects), with the metrics and access check they share with the rest.
   */
  direct?: DirectRoutes;
}

/**
 * A grpc-js server with the project's limits and raised receive windows. grpc-js 1.14 has no
 * option for the server side's windows (grpc-node PR #3058 adds one): the server's HTTP/2 settings
 * and each new session's connection window are set on its internals here, and the start fails
 * loudly if those internals ever change.
 */
export function createGrpcServer(options: GrpcServerOptions): Server {
  const channelOptions: ChannelOptions = {
    'grpc.max_receive_message_length': options.maxMessageBytes,
    'grpc.max_send_message_length': options.maxMessageBytes,
  };
  const server = new Server({ ...channelOptions, interceptors: options.interceptors ?? [] });
  const internals = server as unknown as {
    commonServerOptions?: http2.SecureServerOptions;
    createHttp2Server?: (credentials: ServerCredentials) => http2.Http2Server;
  };
  const { commonServerOptions, createHttp2Server } = internals;
  if (typeof commonServerOptions !== 'object' || typeof createHttp2Server !== 'function') {
    throw new Error(
      'createGrpcServer: @grpc/grpc-js internals changed; the receive window cannot be raised',
    );
  }
  const window = options.flowControlWindowBytes;
  // Frames up to HTTP/2's largest: a peer may then send a large message in fewer, larger DATA
  // frames, each one event here instead of one per 16 KiB (Node's default).
  commonServerOptions.settings = {
    ...commonServerOptions.settings,
    initialWindowSize: window,
    maxFrameSize: 16_777_215,
  };
  // With a client CA, a client without a certificate (or with one the CA did not sign) still
  // completes the handshake: grpc-js then reports no peer certificate for its calls (it reports
  // only verified ones) and the access interceptor refuses them UNAUTHENTICATED, by name, instead
  // of a handshake failure the client cannot explain. It also lets token holders in.
  commonServerOptions.rejectUnauthorized = false;
  const direct = options.direct;
  internals.createHttp2Server = (credentials) => {
    const http2Server = createHttp2Server.call(server, credentials);
    http2Server.on('session', (session) => session.setLocalWindowSize(window));
    if (direct)
      routeDirectCalls(http2Server, direct, {
        maxReceiveMessageBytes: options.maxMessageBytes,
        maxSendMessageBytes: options.maxMessageBytes,
      });
    return http2Server;
  };
  return server;
}

/**
 * Keepalive pings while calls are open. A connection whose peer went silent (a black-holed route,
 * a host gone without a reset) still looks ready to its channel: without pings, every call on it
 * waits out its own deadline (30 s) and its retry takes the same dead connection. With them, the
 * connection fails within 5 s (an unanswered ping), its calls fail UNAVAILABLE, and their retries
 * connect again. Servers made by `createGrpcServer` answer pings of any rate.
 */
export const keepaliveChannelOptions: ChannelOptions = {
  'grpc.keepalive_time_ms': 2_000,
  'grpc.keepalive_timeout_ms': 3_000,
};

/** Client channel options matching a server made by `createGrpcServer`, with keepalive pings. */
export function clientChannelOptions(options: GrpcServerOptions): ChannelOptions {
  return {
    ...keepaliveChannelOptions,
    'grpc.max_receive_message_length': options.maxMessageBytes,
    'grpc.max_send_message_length': options.maxMessageBytes,
    'grpc-node.flow_control_window': options.flowControlWindowBytes,
  };
}
