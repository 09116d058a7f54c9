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
