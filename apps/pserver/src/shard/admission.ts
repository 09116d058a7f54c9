import { PserverError } from './errors';

/**
 * Caps the bytes of pushes being staged or applied at once. Each push holds its gradients in
 * buffers next to their tensors until it is applied; without a cap, many trainers pushing large
 * blocks at once could exhaust memory. Beyond the cap a push is refused with RESOURCE_EXHAUSTED
 * and a retry hint, and changes nothing; the client backs off and retries.
 *
 * The data path stages a push's gradients as their bytes arrive, and only while this cap admits
 * them; beyond it, a message is held whole until the push is refused, as grpc-js holds every
 * message: bounded by the maximum message size per call, not by this cap.
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

  /** Counts `bytes` in and says true, or says false (counting nothing) when over the cap. */
  tryAcquire(bytes: number): boolean {
    if (this.bytes + bytes > this.limitBytes) return false;
    this.bytes += bytes;
    return true;
  }

  release(bytes: number): void {
    this.bytes -= bytes;
  }
}
