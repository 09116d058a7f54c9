import type { Logger } from '@pserver/logging';

/**
 * What a service method knows about the call it serves, without knowing gRPC: `service/` code
 * takes `(request, ctx)` and is unit-tested with a hand-made context.
 */
export interface CallContext {
  /** Aborted when the client cancels or the deadline passes; every wait listens to it. */
  readonly signal: AbortSignal;
  /** The call's deadline in milliseconds since the Unix epoch, or Infinity. */
  readonly deadline: number;
  /** The client's address, for logs. */
  readonly peer: string;
  readonly logger: Logger;
}
