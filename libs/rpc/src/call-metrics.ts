import { ServerInterceptingCall, type ServerInterceptor, status } from '@grpc/grpc-js';
import { Counter, Histogram, type Registry } from 'prom-client';
import { metadataKeys } from './metadata-keys';

/**
 * A server interceptor that counts every call by method, gRPC status and domain error code (the
 * `pserver-error-code` trailer: stale epochs, overload, …), times it, and counts the payload
 * bytes that went in and out (binary fields: tensor contents).
 */
export function callMetricsInterceptor(registry: Registry): ServerInterceptor {
  const calls = new Counter({
    name: 'pserver_rpc_calls_total',
    help: 'Calls answered, by method, gRPC status and domain error code ("" when none).',
    labelNames: ['method', 'code', 'error'],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'pserver_rpc_duration_seconds',
    help: 'Time from a call’s arrival to its status, by method and gRPC status.',
    labelNames: ['method', 'code'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const payload = new Counter({
    name: 'pserver_rpc_payload_bytes_total',
    help: 'Bytes of binary fields (tensor contents) received and sent, by method.',
    labelNames: ['method', 'direction'],
    registers: [registry],
  });
  return (descriptor, call) => {
    const method = descriptor.path.slice(descriptor.path.lastIndexOf('/') + 1);
    const started = process.hrtime.bigint();
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message, nextMessage) => {
            payload.inc({ method, direction: 'in' }, binaryBytes(message));
            nextMessage(message);
          },
        }),
      sendMessage: (message, next) => {
        payload.inc({ method, direction: 'out' }, binaryBytes(message));
        next(message);
      },
      sendStatus: (sent, next) => {
        const code = status[sent.code] ?? String(sent.code);
        const error = String(sent.metadata?.get(metadataKeys.errorCode)[0] ?? '');
        calls.inc({ method, code, error });
        seconds.observe({ method, code }, Number(process.hrtime.bigint() - started) / 1e9);
        next(sent);
      },
    });
  };
}

/** The bytes of the Buffers in a message, a few levels deep (the messages are shallow). */
function binaryBytes(message: unknown, depth = 0): number {
  if (Buffer.isBuffer(message) || message instanceof Uint8Array) return message.byteLength;
  if (depth > 3 || typeof message !== 'object' || message === null) return 0;
  let sum = 0;
  for (const value of Array.isArray(message) ? message : Object.values(message))
    if (typeof value === 'object' && value !== null) sum += binaryBytes(value, depth + 1);
  return sum;
}
