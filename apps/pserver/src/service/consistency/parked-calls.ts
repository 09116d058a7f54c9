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

  /** Reads waiting now. */
  get size(): number {
    return this.parked.size;
  }

  /**
   * Resolves once `clock()` ≥ `needed` (at once if it is); rejects with the signal's reason when
   * it aborts first, or with `abandon`'s error.
   */
  wait(needed: number, clock: () => number, signal: AbortSignal): Promise<void> {
    if (clock() >= needed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const read: ParkedCall = {
        needed,
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = (): void => {
        this.parked.delete(read);
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.parked.add(read);
    });
  }

  /** The clock moved to `clock`: the reads it satisfies go. */
  advanced(clock: number): void {
    for (const read of this.parked) {
      if (read.needed <= clock) {
        this.parked.delete(read);
        read.resolve();
      }
    }
  }

  /** Every parked read fails with `err`. */
  abandon(err: unknown): void {
    for (const read of this.parked) read.reject(err);
    this.parked.clear();
  }
}
