/**
 * Memory for shard snapshots, kept from one checkpoint to the next. A snapshot copies the whole
 * shard; copying into freshly allocated buffers costs a page fault per 4 KiB touched, which on
 * this kind of machine takes longer than the copy itself (a 1 GiB shard: seconds instead of a
 * fraction of one). Reused slabs are faulted in once. The pool keeps the largest snapshot's worth
 * of memory: the "snapshot copy" a checkpointing shard is allowed.
 */
export class SnapshotBuffers {
  private readonly slabs: Buffer[] = [];
  private readonly large: { buffer: Buffer; inUse: boolean }[] = [];
  private slab = 0;
  private offset = 0;

  constructor(private readonly slabBytes = 64 * 1024 * 1024) {}

  /** A buffer of exactly `bytes`, valid until `release`. */
  take(bytes: number): Buffer {
    if (bytes > this.slabBytes / 4) return this.takeLarge(bytes);
    // 8-byte alignment, so views of any element type can be made on the copies.
    const aligned = Math.ceil(bytes / 8) * 8;
    if (this.offset + aligned > this.slabBytes) {
      this.slab++;
      this.offset = 0;
    }
    const slab = (this.slabs[this.slab] ??= Buffer.allocUnsafeSlow(this.slabBytes));
    const view = slab.subarray(this.offset, this.offset + bytes);
    this.offset += aligned;
    return view;
  }

  /** A copy of `bytes` in the pool. */
  copy(bytes: Uint8Array): Buffer {
    const target = this.take(bytes.byteLength);
    target.set(bytes);
    return target;
  }

  /**
   * Faults in slabs for `bytes` of small copies ahead of a snapshot, a few MiB per turn of the
   * event loop, so that the snapshot itself (taken synchronously) finds its memory ready. Only
   * while nobody takes from these buffers.
   */
  async prefault(bytes: number): Promise<void> {
    const step = 8 << 20;
    for (let k = this.slabs.length; k < Math.ceil(bytes / this.slabBytes); k++) {
      const slab = Buffer.allocUnsafeSlow(this.slabBytes);
      for (let offset = 0; offset < slab.byteLength; offset += step) {
        slab.fill(0, offset, Math.min(offset + step, slab.byteLength));
        await new Promise(setImmediate);
      }
      this.slabs.push(slab);
    }
  }

  /** Makes every buffer taken so far available again. */
  release(): void {
    this.slab = 0;
    this.offset = 0;
    for (const entry of this.large) entry.inUse = false;
  }

  /** Bytes the pool holds. */
  get retainedBytes(): number {
    return (
      this.slabs.length * this.slabBytes +
      this.large.reduce((total, e) => total + e.buffer.byteLength, 0)
    );
  }

  private takeLarge(bytes: number): Buffer {
    let entry = this.large.find((e) => !e.inUse && e.buffer.byteLength >= bytes);
    if (!entry) {
      entry = { buffer: Buffer.allocUnsafeSlow(bytes), inUse: false };
      this.large.push(entry);
    }
    entry.inUse = true;
    return entry.buffer.subarray(0, bytes);
  }
}

/**
 * The snapshot memory of one process, lent out one `SnapshotBuffers` at a time: a checkpoint, a
 * replica's or a receiver's copy, or the next role's first checkpoint after a change of the
 * shard count takes memory that an earlier one faulted in, rather than new memory whose page
 * faults would hold the shard's updates for seconds while it is copied.
 */
export class SnapshotPools {
  private readonly idle: SnapshotBuffers[] = [];
  private warming = Promise.resolve();

  /** Buffers no other user holds, until `give` takes them back. */
  take(): SnapshotBuffers {
    return this.idle.pop() ?? new SnapshotBuffers();
  }

  /**
   * Makes the buffers the next `take` lends ready for a snapshot of about `bytes` (of small
   * copies: `SnapshotBuffers.prefault`), in the background: e.g. while a live move's receiver
   * follows the pushes, before it serves and commits its share. Calls run one after another.
   */
  warm(bytes: number): Promise<void> {
    const run = this.warming.then(async () => {
      const buffers = this.take();
      try {
        await buffers.prefault(bytes);
      } finally {
        this.give(buffers);
      }
    });
    this.warming = run.catch(() => undefined);
    return run;
  }

  /** Takes `buffers` back (released): the next `take` may lend them again. */
  give(buffers: SnapshotBuffers): void {
    buffers.release();
    // The largest ones first: a shard's checkpoint, the largest user, gets the warmest memory.
    this.idle.push(buffers);
    this.idle.sort((a, b) => a.retainedBytes - b.retainedBytes);
  }
}
