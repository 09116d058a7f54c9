import { ServerInterceptingCall, type ServerInterceptor, status } from '@grpc/grpc-js';
import { Counter, Histogram, type Registry } from 'prom-client';
import { metadataKeys } from './metadata-keys';

/**
 * The calls a server answered: counted by method, gRPC status and domain error code (the
 * `pserver-error-code` trailer: stale epochs, overload, …), timed, and the payload bytes that
 * went in and out (binary fields: tensor contents). Both ways calls are served record here: the
 * grpc-js interceptor below and the direct data path (`direct/`).
 */
export class CallMetrics {
  private readonly calls: Counter<'method' | 'code' | 'error'>;
  private readonly seconds: Histogram<'method' | 'code'>;
  private readonly payload: Counter<'method' | 'direction'>;
  /**
   * Label children by their values: a hot method answers thousands of calls a second, and
   * prom-client hashes a labels object on every `inc` that is not given its child.
   */
  private readonly callChildren = new Map<string, { inc(): void }>();
  private readonly secondsChildren = new Map<string, { observe(value: number): void }>();
  private readonly payloadChildren = new Map<string, { inc(value: number): void }>();

  constructor(registry: Registry) {
    this.calls = new Counter({
      name: 'pserver_rpc_calls_total',
      help: 'Calls answered, by method, gRPC status and domain error code ("" when none).',
      labelNames: ['method', 'code', 'error'],
      registers: [registry],
    });
    this.seconds = new Histogram({
      name: 'pserver_rpc_duration_seconds',
      help: 'Time from a call’s arrival to its status, by method and gRPC status.',
      labelNames: ['method', 'code'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.payload = new Counter({
      name: 'pserver_rpc_payload_bytes_total',
      help: 'Bytes of binary fields (tensor contents) received and sent, by method.',
      labelNames: ['method', 'direction'],
      registers: [registry],
    });
  }

  /** A call answered with `code` (and domain `error`, "" when none), begun at `startedNs`. */
  answered(method: string, code: status, error: string, startedNs: bigint): void {
    const codeName = status[code] ?? String(code);
    const key = `${method}\u0000${codeName}`;
    let calls = this.callChildren.get(`${key}\u0000${error}`);
    if (!calls) {
      calls = this.calls.labels(method, codeName, error);
      this.callChildren.set(`${key}\u0000${error}`, calls);
    }
    calls.inc();
    let seconds = this.secondsChildren.get(key);
    if (!seconds) {
      seconds = this.seconds.labels(method, codeName);
      this.secondsChildren.set(key, seconds);
    }
    seconds.observe(Number(process.hrtime.bigint() - startedNs) / 1e9);
  }

  /** Payload bytes of one message of `method`, received ('in') or sent ('out'). */
  bytes(method: string, direction: 'in' | 'out', bytes: number): void {
    const key = `${method}\u0000${direction}`;
    let child = this.payloadChildren.get(key);
    if (!child) {
      child = this.payload.labels(method, direction);
      this.payloadChildren.set(key, child);
    }
    child.inc(bytes);
  }
}

/** A server interceptor that records every call grpc-js serves in `metrics`. */
export function callMetricsInterceptor(metrics: CallMetrics): ServerInterceptor {
  return (descriptor, call) => {
    const method = descriptor.path.slice(descriptor.path.lastIndexOf('/') + 1);
    const started = process.hrtime.bigint();
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message, nextMessage) => {
            metrics.bytes(method, 'in', binaryBytes(message));
            nextMessage(message);
          },
        }),
      sendMessage: (message, next) => {
        metrics.bytes(method, 'out', binaryBytes(message));
        next(message);
      },
      sendStatus: (sent, next) => {
        const error = String(sent.metadata?.get(metadataKeys.errorCode)[0] ?? '');
        metrics.answered(method, sent.code, error, started);
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
