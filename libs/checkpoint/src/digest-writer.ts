import { createHash } from 'node:crypto';

const bufferBytes = 64 * 1024;

/**
 * Feeds the primitives of a digest's canonical form (README.md, "Job digest") to a SHA-256:
 * integers little-endian and fixed-width, byte strings and text after their length. Small writes
 * go through a buffer, since a hash update per row field would cost more than the hashing; large
 * ones (a tensor's content) go to the hash as they are.
 */
export class DigestWriter {
  private readonly hash = createHash('sha256');
  private readonly buffer = Buffer.allocUnsafe(bufferBytes);
  private used = 0;

  u32(value: number): void {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff)
      throw new RangeError(`digest: ${value} is not a uint32`);
    this.room(4);
    this.buffer.writeUInt32LE(value, this.used);
    this.used += 4;
  }

  /** An unsigned 64-bit integer; a number beyond 2^53 is refused (it would not be exact). */
  u64(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`digest: ${value} is not a uint64 below 2^53`);
    this.room(8);
    this.buffer.writeUInt32LE(value % 2 ** 32, this.used);
    this.buffer.writeUInt32LE(Math.floor(value / 2 ** 32), this.used + 4);
    this.used += 8;
  }

  /** An IEEE 754 binary64, its bits as they are. */
  f64(value: number): void {
    this.room(8);
    this.buffer.writeDoubleLE(value, this.used);
    this.used += 8;
  }

  /** Bytes as they are, with no length before them (their length is implied by what precedes). */
  raw(bytes: Uint8Array): void {
    if (bytes.byteLength > bufferBytes) {
      this.flush();
      this.hash.update(bytes);
      return;
    }
    this.room(bytes.byteLength);
    this.buffer.set(bytes, this.used);
    this.used += bytes.byteLength;
  }

  /**
   * `source[start, end)` as `raw` writes it. A row's few bytes are copied by a loop: a view per
   * row (`subarray`, or `Buffer.copy`, which makes them) costs more than the copy.
   */
  copy(source: Uint8Array, start: number, end: number): void {
    if (end - start > 256) {
      this.raw(source.subarray(start, end));
      return;
    }
    this.room(end - start);
    const buffer = this.buffer;
    let at = this.used;
    for (let k = start; k < end; k++) buffer[at++] = source[k]!;
    this.used = at;
  }

  /** A byte string: its length as a u64, then its bytes. */
  bytes(bytes: Uint8Array): void {
    this.u64(bytes.byteLength);
    this.raw(bytes);
  }

  /** Text as a byte string of its UTF-8. */
  text(value: string): void {
    this.bytes(Buffer.from(value, 'utf8'));
  }

  /** The SHA-256 of everything written; the writer is done. */
  digest(): Buffer {
    this.flush();
    return this.hash.digest();
  }

  private room(bytes: number): void {
    if (this.used + bytes > bufferBytes) this.flush();
  }

  private flush(): void {
    if (this.used === 0) return;
    this.hash.update(this.buffer.subarray(0, this.used));
    this.used = 0;
  }
}

/** Orders names by their UTF-8 bytes (JavaScript's `<` orders UTF-16 code units, which differs). */
export function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
