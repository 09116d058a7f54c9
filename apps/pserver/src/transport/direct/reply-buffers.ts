/**
 * Buffers for the values a pull sends, used again once a reply has left for the socket. A
 * pserver answering 4 MiB pulls at a gigabyte a second would otherwise allocate 250 fresh
 * 4 MiB buffers a second: each one page-faulted in on its first write, and each one pressure on
 * the garbage collector. Small buffers come from Node's own pool instead.
 */
export class ReplyBuffers {
  /** Idle buffers by size class (a power of two). */
  private readonly idle = new Map<number, Buffer[]>();
  private idleBytes = 0;

  constructor(
    /** The most bytes kept idle; a buffer given back beyond it is left to the collector. */
    private readonly maxIdleBytes = 64 * 1024 * 1024,
    /** Buffers below this are not pooled. */
    private readonly minPooledBytes = 64 * 1024,
  ) {}

  /** A buffer of at least `byteLength` bytes, its content undefined. */
  take(byteLength: number): Buffer {
    if (byteLength < this.minPooledBytes) return Buffer.allocUnsafe(byteLength);
    const size = sizeClass(byteLength);
    const buffer = this.idle.get(size)?.pop();
    if (!buffer) return Buffer.allocUnsafeSlow(size);
    this.idleBytes -= size;
    return buffer;
  }

  /** Gives back buffers from `take`, no longer read by anything. */
  give(buffers: readonly Buffer[]): void {
    for (const buffer of buffers) {
      const size = buffer.byteLength;
      if (size < this.minPooledBytes || size !== sizeClass(size)) continue;
      if (this.idleBytes + size > this.maxIdleBytes) continue;
      let list = this.idle.get(size);
      if (!list) this.idle.set(size, (list = []));
      list.push(buffer);
      this.idleBytes += size;
    }
  }
}

function sizeClass(byteLength: number): number {
  return 2 ** Math.ceil(Math.log2(byteLength));
}
