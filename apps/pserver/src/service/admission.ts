import { PserverError } from './errors';

/**
 * Caps the bytes of pushes being staged or applied at once. Each push holds its gradients in
 * buffers next to their tensors until it is applied; without a cap, many trainers pushing large
 * blocks at once could exhaust memory. Beyond the cap a push is refused with RESOURCE_EXHAUSTED
 * and a retry hint, and changes nothing; the client backs off and retries.
 *
 * grpc-js reads a unary message whole before the handler runs, so that copy is bounded by the
 * maximum message size per call, not by this cap.
 */
export class AdmissionControl {
  private bytes = 0;

  constructor(
    readonly limitBytes: number,
    private readonly retryAfterMs = 100,
  ) {}

  get inFlight(): number {
    return this.bytes;
  }

  /** Counts `bytes` in, or throws PSERVER_OVERLOADED (counting nothing) when over the cap. */
  acquire(bytes: number): void {
    if (this.bytes + bytes > this.limitBytes) {
      throw new PserverError(
        'PSERVER_OVERLOADED',
        `push of ${bytes} bytes refused: ${this.bytes} of ${this.limitBytes} bytes of pushes already in flight`,
        { retryAfterMs: this.retryAfterMs },
      );
    }
    this.bytes += bytes;
  }

  release(bytes: number): void {
    this.bytes -= bytes;
  }
}
