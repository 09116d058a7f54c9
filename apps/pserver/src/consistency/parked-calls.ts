/** A call waiting for the shard's clock to reach `needed`. */
interface ParkedCall {
  needed: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Calls parked until the shard's clock (SYNC: the steps closed; SSP: the slowest roster member's
 * step) reaches what they need: reads, and SYNC pushes for the step after the open one. Whoever
 * moves the clock calls `advanced`; a call leaves when its signal aborts (its deadline, a
 * cancelled call), or all leave with an error when the shard stops serving (fenced, shutting
 * down), so none outlives its call.
 */
export class ParkedCalls {
  private readonly parked = new Set<ParkedCall>();
  private waitedMs = 0;

  /** Calls waiting now. */
  get size(): number {
    return this.parked.size;
  }

  /** The time calls spent parked, summed over the calls that left (the wait at the barrier). */
  get waitedSeconds(): number {
    return this.waitedMs / 1000;
  }

  /**
   * Resolves once `clock()` ≥ `needed` (at once if it is); rejects with the signal's reason when
   * it aborts first, or with `abandon`'s error.
   */
  wait(needed: number, clock: () => number, signal: AbortSignal): Promise<void> {
    if (clock() >= needed) return Promise.resolve();
    const parkedAt = performance.now();
    return new Promise((resolve, reject) => {
      const leave = (): void => {
        signal.removeEventListener('abort', onAbort);
        this.waitedMs += performance.now() - parkedAt;
      };
      const call: ParkedCall = {
        needed,
        resolve: () => {
          leave();
          resolve();
        },
        reject: (err) => {
          leave();
          reject(err);
        },
      };
      const onAbort = (): void => {
        this.parked.delete(call);
        call.reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.parked.add(call);
    });
  }

  /** The clock moved to `clock`: the calls it satisfies go. */
  advanced(clock: number): void {
    for (const call of this.parked) {
      if (call.needed <= clock) {
        this.parked.delete(call);
        call.resolve();
      }
    }
  }

  /** Every parked call fails with `err`. */
  abandon(err: unknown): void {
    for (const call of this.parked) call.reject(err);
    this.parked.clear();
  }
}
