/**
 * A protobuf encoder for the few replies the data path writes by hand (their shapes are fixed and
 * small; a generic encoder's per-field bookkeeping cost more than the bytes). Values are written
 * into one buffer, grown as needed; `finish` returns the bytes.
 */
export class ProtoWriter {
  private buffer: Buffer;

  private at = 0;

  constructor(initialBytes = 64) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  get length(): number {
    return this.at;
  }

  varint(value: number): this {
    this.room(10);
    while (value >= 0x80) {
      this.buffer[this.at++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buffer[this.at++] = value;
    return this;
  }

  /** A field's tag: its number and wire type (0 varint, 2 length-delimited). */
  tag(field: number, wireType: 0 | 2): this {
    return this.varint(field * 8 + wireType);
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, 2).varint(value.byteLength);
    this.room(value.byteLength);
    this.buffer.set(value, this.at);
    this.at += value.byteLength;
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, Buffer.from(value));
  }

  /** A nested message written by `write` into a writer of its own. */
  message(field: number, write: (nested: ProtoWriter) => void): this {
    const nested = new ProtoWriter();
    write(nested);
    return this.bytes(field, nested.finish());
  }

  finish(): Buffer {
    return this.buffer.subarray(0, this.at);
  }

  private room(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + bytes));
    this.buffer.copy(grown, 0, 0, this.at);
    this.buffer = grown;
  }
}

/** The number of bytes `value` takes as a varint. */
export function varintLength(value: number): number {
  let length = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    length++;
  }
  return length;
}
