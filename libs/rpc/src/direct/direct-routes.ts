import type http2 from 'node:http2';
import type { Logger } from '@pserver/logging';
import type { CallMetrics } from '../call-metrics';
import type { AccessCheck } from '../security/access-interceptor';
import { DirectCall } from './direct-call';

/** Serves one call of a direct method; it answers the call exactly once (`respond` or `fail`). */
export type DirectMethod = (call: DirectCall) => void;

/**
 * The methods a server serves straight on HTTP/2 (its data path), and what those calls need of
 * the server: the same metrics and the same access check as the calls grpc-js serves.
 */
export interface DirectRoutes {
  /** By path, e.g. `/pserver.v1.ParameterServer/SendGrads`. */
  methods: ReadonlyMap<string, DirectMethod>;
  metrics?: CallMetrics;
  access?: AccessCheck;
  logger: Logger;
}

type StreamListener = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  flags: number,
) => void;

/**
 * Takes over the 'stream' listener grpc-js installed on `http2Server`: a call to a direct method
 * is served by it, any other call (and a direct method's call that asks for compression, or is
 * not gRPC at all) goes to grpc-js as before. Sessions, TLS, keepalive, GOAWAY and shutdown stay
 * grpc-js's: direct calls are streams of the same sessions.
 */
export function routeDirectCalls(
  http2Server: http2.Http2Server | http2.Http2SecureServer,
  routes: DirectRoutes,
  limits: { maxReceiveMessageBytes: number; maxSendMessageBytes: number },
): void {
  const listeners = http2Server.listeners('stream') as StreamListener[];
  if (listeners.length !== 1)
    throw new Error(
      `routeDirectCalls: expected grpc-js's one 'stream' listener, found ${listeners.length}; @grpc/grpc-js internals changed`,
    );
  const grpcJs = listeners[0]!;
  http2Server.removeListener('stream', grpcJs);
  const settings = { ...limits, metrics: routes.metrics, logger: routes.logger };
  // The method's short name (metrics, logs) with each route, not cut from the path per call.
  const byPath = new Map(
    [...routes.methods].map(([path, serve]) => [
      path,
      { serve, name: path.slice(path.lastIndexOf('/') + 1) },
    ]),
  );
  http2Server.on('stream', (stream: http2.ServerHttp2Stream, headers, flags: number) => {
    const path = headers[':path'];
    const route = path === undefined ? undefined : byPath.get(path);
    if (!route || !servedDirectly(headers)) return grpcJs(stream, headers, flags);
    const call = new DirectCall(stream, headers, route.name, settings);
    if (call.done) return;
    if (routes.access) {
      const { metadata, auth } = call.credentials();
      const refusal = routes.access(path!, metadata, auth, call.peer);
      if (refusal) return call.failWith(refusal);
    }
    try {
      route.serve(call);
    } catch (err) {
      call.fail(err);
    }
  });
}

/** A gRPC call without compression: anything else is grpc-js's to answer. */
function servedDirectly(headers: http2.IncomingHttpHeaders): boolean {
  const contentType = headers['content-type'];
  if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) return false;
  const encoding = headers['grpc-encoding'];
  return encoding === undefined || encoding === 'identity';
}
