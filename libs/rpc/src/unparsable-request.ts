import type { ServiceDefinition } from '@grpc/grpc-js';

/**
 * What a request message decodes to when it is not a valid protobuf of the method's type.
 *
 * grpc-js answers a request whose deserializer throws with INTERNAL ("Error deserializing
 * request") before any handler or interceptor runs: the status of a server bug, which clients
 * retry (the Python client does) and which metrics never count. The services here decode through
 * `tolerantDeserializers`, which hand the handler this instead; the handlers answer it
 * INVALID_ARGUMENT with RPC_UNPARSABLE_MESSAGE: the client sent something wrong, and sending it
 * again cannot help.
 */
export class UnparsableRequest {
  constructor(
    /** The decoder's complaint, e.g. "index out of range: 12 + 10 > 16". */
    readonly reason: string,
  ) {}
}

/** The error a handler throws for an `UnparsableRequest`. */
export class UnparsableRequestError extends Error {
  override readonly name = 'UnparsableRequestError';
  readonly code = 'RPC_UNPARSABLE_MESSAGE';

  constructor(method: string, request: UnparsableRequest) {
    super(`${method}: the request is not a valid protobuf message of its type (${request.reason})`);
  }
}

/** `request`, or the error for it when it did not parse. */
export function parsed<Req>(method: string, request: Req | UnparsableRequest): Req {
  if (request instanceof UnparsableRequest) throw new UnparsableRequestError(method, request);
  return request;
}

/** `definition` with request deserializers that return an `UnparsableRequest` instead of throwing. */
export function tolerantDeserializers<D extends ServiceDefinition>(definition: D): D {
  return Object.fromEntries(
    Object.entries(definition).map(([name, method]) => [
      name,
      {
        ...method,
        requestDeserialize: (bytes: Buffer): unknown => {
          try {
            return method.requestDeserialize(bytes);
          } catch (err) {
            return new UnparsableRequest(err instanceof Error ? err.message : String(err));
          }
        },
      },
    ]),
  ) as D;
}
