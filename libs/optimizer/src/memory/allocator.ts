/** Where an allocation must start: at an offset equal to `residue` modulo `modulus`. */
export interface Placement {
  modulus: number;
  residue: number;
}

/**
 * First-fit allocation of byte ranges in a region that can only grow (a WebAssembly memory).
 * Free ranges are kept sorted by offset and merged with their neighbours, so freeing everything
 * gives back one range. Pure bookkeeping: it touches no memory.
 */
export class RangeAllocator {
  /** Free ranges, sorted by offset, never adjacent (adjacent ranges are merged). */
  private readonly ranges: { offset: number; size: number }[] = [];
  private readonly sizes = new Map<number, number>();
  private end: number;

  /** Ranges are aligned to `alignment` bytes; [0, start) is never handed out. */
  constructor(
    start: number,
    readonly alignment: number,
  ) {
    this.end = start;
  }

  /** The end of the managed region: everything below it is either in use or free. */
  get size(): number {
    return this.end;
  }

  get bytesInUse(): number {
    let total = 0;
    for (const size of this.sizes.values()) total += size;
    return total;
  }

  /** The size a request is rounded up to. */
  roundUp(bytes: number): number {
    return Math.ceil(Math.max(bytes, 1) / this.alignment) * this.alignment;
  }

  /**
   * An offset for `bytes`, or undefined when no free range is large enough (grow, then retry).
   * With a placement, the offset is `residue` modulo `modulus` (both multiples of the alignment);
   * the bytes skipped before it stay free.
   */
  allocate(bytes: number, placement?: Placement): number | undefined {
    const size = this.roundUp(bytes);
    for (let index = 0; index < this.ranges.length; index++) {
      const range = this.ranges[index]!;
      const offset = placement ? placed(range.offset, placement) : range.offset;
      if (offset + size > range.offset + range.size) continue;
      this.take(index, offset, size);
      this.sizes.set(offset, size);
      return offset;
    }
    return undefined;
  }

  /** Adds [size, newSize) to the free ranges after the region grew. */
  grow(newSize: number): void {
    if (newSize <= this.end) return;
    this.release(this.end, newSize - this.end);
    this.end = newSize;
  }

  /** How many bytes past the end a request of `bytes` needs (a free range at the end counts). */
  shortfall(bytes: number, placement?: Placement): number {
    const size = this.roundUp(bytes) + (placement ? placement.modulus - this.alignment : 0);
    const last = this.ranges[this.ranges.length - 1];
    const tail = last && last.offset + last.size === this.end ? last.size : 0;
    return Math.max(0, size - tail);
  }

  free(offset: number): void {
    const size = this.sizes.get(offset);
    if (size === undefined) throw new Error(`RangeAllocator: offset ${offset} is not allocated`);
    this.sizes.delete(offset);
    this.release(offset, size);
  }

  /** Removes [offset, offset + size) from the free range at `index`, which holds it. */
  private take(index: number, offset: number, size: number): void {
    const range = this.ranges[index]!;
    const after = { offset: offset + size, size: range.offset + range.size - (offset + size) };
    const pieces = [
      ...(offset > range.offset ? [{ offset: range.offset, size: offset - range.offset }] : []),
      ...(after.size > 0 ? [after] : []),
    ];
    this.ranges.splice(index, 1, ...pieces);
  }

  private release(offset: number, size: number): void {
    let index = this.ranges.findIndex((range) => range.offset > offset);
    if (index < 0) index = this.ranges.length;
    this.ranges.splice(index, 0, { offset, size });
    // Merge with the next range, then with the previous one.
    const next = this.ranges[index + 1];
    const current = this.ranges[index]!;
    if (next && current.offset + current.size === next.offset) {
      current.size += next.size;
      this.ranges.splice(index + 1, 1);
    }
    const previous = this.ranges[index - 1];
    if (previous && previous.offset + previous.size === current.offset) {
      previous.size += current.size;
      this.ranges.splice(index, 1);
    }
  }
}

/** The first offset at or after `start` that the placement allows. */
function placed(start: number, { modulus, residue }: Placement): number {
  return start + ((((residue - start) % modulus) + modulus) % modulus);
}
