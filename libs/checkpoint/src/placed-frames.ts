import fs from 'node:fs/promises';
import path from 'node:path';
import type {
  CheckpointFrame__Output,
  CheckpointIndex__Output,
  FramePlace__Output,
} from '@pserver/proto';
import { CheckpointError, ioError } from './errors';
import { Checksum, decodeFrame } from './format';
import type { ChainFile, FramePlace } from './meta';

type FrameKind = NonNullable<CheckpointFrame__Output['frame']>;

/** A frame's message bytes and what they decode to. */
export interface PlacedFrameRead {
  body: Buffer;
  frame: CheckpointFrame__Output;
}

/**
 * Memory frames are read into one after another, when each is done with before the next: a read
 * of hundreds of MiB then faults in the largest frame's size once, not every frame's (the
 * page faults of fresh memory cost more than the read on some machines).
 */
export class FrameScratch {
  private buffer = Buffer.alloc(0);

  /** `length` bytes of the scratch's memory (grown when too small; its content is undefined). */
  take(length: number): Buffer {
    if (this.buffer.byteLength < length) this.buffer = Buffer.allocUnsafeSlow(length);
    return this.buffer.subarray(0, length);
  }
}

/**
 * One checkpoint file read frame by frame at the places its index gives, each frame checked
 * against the CRC-32C the index gives it (the index against the meta's): what the readers of part
 * of a file (one bucket, a shard's share) share. Anything that does not verify is
 * CHECKPOINT_CORRUPT naming the file and the byte.
 */
export class PlacedFrames {
  /** Bytes read so far. */
  bytesRead = 0;

  private constructor(
    private readonly handle: fs.FileHandle,
    readonly file: ChainFile,
  ) {}

  /** Opens `file` of a chain under `root`, checking its size against its meta's. */
  static async open(root: string, file: ChainFile): Promise<PlacedFrames> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(path.join(root, file.path), 'r');
    } catch (err) {
      throw ioError(`checkpoint ${file.path}`, err);
    }
    const frames = new PlacedFrames(handle, file);
    try {
      const { size } = await handle.stat();
      if (size !== file.size) throw frames.corrupt(`${size} bytes, its meta says ${file.size}`);
      return frames;
    } catch (err) {
      await handle.close();
      if (err instanceof CheckpointError) throw err;
      throw ioError(`checkpoint ${file.path}`, err);
    }
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  /** The index frame at the place the meta records. */
  async index(): Promise<CheckpointIndex__Output> {
    if (!this.file.indexPlace)
      throw new CheckpointError(
        'CHECKPOINT_INCOMPATIBLE',
        `checkpoint ${this.file.path} has no index`,
      );
    return (await this.read(this.file.indexPlace, 'index', 'the index')).frame.index!;
  }

  /**
   * The header frame's message bytes: at the place the index gives, or, for an index written
   * before it placed the header, the file's first frame as its length prefix says.
   */
  async header(place: FramePlace__Output | null): Promise<Buffer> {
    if (place) return (await this.read(place, 'header', 'the header')).body;
    const prefixBytes = Buffer.alloc(Math.min(maxVarintBytes, this.file.size));
    await this.readAt(prefixBytes, 0);
    const { value: length, bytes: prefix } = readVarint(prefixBytes);
    if (prefix === 0 || prefix + length > this.file.size)
      throw this.corrupt('holds no whole frame at byte 0');
    const body = Buffer.allocUnsafe(length);
    await this.readAt(body, prefix);
    this.bytesRead += prefix + length;
    if (decode(body, this.file, 0).frame !== 'header')
      throw this.corrupt('does not start with a header');
    return body;
  }

  /**
   * The frame at `place` (an index entry, `what` naming it), checked against its CRC-32C and its
   * length prefix, decoded; it must be a `kind` frame. With `scratch`, it is read into the
   * scratch's memory: what it decodes to holds views of it, valid until the next read into it.
   */
  async read(
    raw: FramePlace | FramePlace__Output | null,
    kind: FrameKind,
    what: string,
    scratch?: FrameScratch,
  ): Promise<PlacedFrameRead> {
    if (!raw) throw this.corrupt(`${what} without its place in the index`);
    const place = {
      offset: Number(raw.offset),
      length: Number(raw.length),
      checksum: typeof raw.checksum === 'string' ? raw.checksum : raw.checksum.toString('hex'),
    };
    const at = `the frame at byte ${place.offset} (${what})`;
    const bytes = scratch ? scratch.take(place.length) : Buffer.allocUnsafe(place.length);
    if (place.offset + place.length > this.file.size)
      throw this.corrupt(`${at} ends past the end of the file`);
    await this.readAt(bytes, place.offset);
    this.bytesRead += place.length;
    const crc = new Checksum();
    crc.update(bytes);
    if (crc.digest().toString('hex') !== place.checksum)
      throw this.corrupt(`${at} does not match its index entry`);
    const { value: length, bytes: prefix } = readVarint(bytes);
    if (prefix === 0 || prefix + length !== place.length)
      throw this.corrupt(
        `${at} holds ${length} bytes after its prefix, its index entry ${place.length} in all`,
      );
    const body = bytes.subarray(prefix);
    const frame = decode(body, this.file, place.offset);
    if (frame.frame !== kind || !frame[kind])
      throw this.corrupt(`${at} is a ${frame.frame ?? 'empty'} frame, its index says ${kind}`);
    return { body, frame };
  }

  corrupt(what: string): CheckpointError {
    return new CheckpointError('CHECKPOINT_CORRUPT', `checkpoint ${this.file.path}: ${what}`);
  }

  private async readAt(buffer: Buffer, position: number): Promise<void> {
    let read = 0;
    try {
      while (read < buffer.byteLength) {
        const { bytesRead } = await this.handle.read(
          buffer,
          read,
          buffer.byteLength - read,
          position + read,
        );
        if (bytesRead === 0) throw this.corrupt(`ends at byte ${position + read}`);
        read += bytesRead;
      }
    } catch (err) {
      if (err instanceof CheckpointError) throw err;
      throw ioError(`checkpoint ${this.file.path}`, err);
    }
  }
}

function decode(body: Buffer, file: ChainFile, offset: number): CheckpointFrame__Output {
  try {
    return decodeFrame(body);
  } catch (err) {
    throw new CheckpointError(
      'CHECKPOINT_CORRUPT',
      `checkpoint ${file.path}: undecodable frame at byte ${offset}`,
      { cause: err },
    );
  }
}

const maxVarintBytes = 10;

/** A protobuf varint; `bytes` is 0 when none is complete within the buffer. */
export function readVarint(buffer: Uint8Array): { value: number; bytes: number } {
  let value = 0;
  let multiplier = 1;
  for (let i = 0; i < Math.min(buffer.byteLength, maxVarintBytes); i++) {
    const byte = buffer[i]!;
    value += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) return { value, bytes: i + 1 };
    multiplier *= 128;
  }
  return { value: 0, bytes: 0 };
}
