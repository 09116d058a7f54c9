import fc from 'fast-check';
import { status } from '@grpc/grpc-js';
import { FramingError, MessageFramer, WholeMessage, type MessageSink } from './message-framer';

/** What a sink saw: each message's bytes, whole. */
class Recorder implements MessageSink {
  readonly messages: Buffer[] = [];
  private parts: Buffer[] = [];
  private length = -1;

  begin(length: number): void {
    expect(this.length).toBe(-1);
    this.length = length;
    this.parts = [];
  }

  bytes(piece: Buffer): void {
    this.parts.push(Buffer.from(piece));
  }

  end(): void {
    const message = Buffer.concat(this.parts);
    expect(message.length).toBe(this.length);
    this.messages.push(message);
    this.length = -1;
  }
}

function framed(message: Buffer, compressed = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed;
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

function feed(framer: MessageFramer, bytes: Buffer, cuts: number[]): void {
  const at = [...new Set([0, ...cuts.map((c) => Math.floor(c * bytes.length)), bytes.length])];
  at.sort((a, b) => a - b);
  for (let i = 1; i < at.length; i++) framer.write(bytes.subarray(at[i - 1], at[i]));
}

describe('MessageFramer', () => {
  it('hands over every message whole, however the stream is cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 6 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 20 }),
        (messages, cuts) => {
          const recorder = new Recorder();
          const framer = new MessageFramer(recorder, 1000);
          const stream = Buffer.concat(messages.map((m) => framed(Buffer.from(m))));
          feed(framer, stream, cuts);
          expect(recorder.messages).toEqual(messages.map((m) => Buffer.from(m)));
          expect(framer.atBoundary).toBe(true);
        },
      ),
      { numRuns: 300, seed: 424242 },
    );
  });

  it('is not at a boundary inside a prefix or a message', () => {
    const framer = new MessageFramer(new Recorder(), 100);
    framer.write(framed(Buffer.from('abc')).subarray(0, 3));
    expect(framer.atBoundary).toBe(false);
    framer.write(Buffer.from([0, 3, 0x61]));
    expect(framer.atBoundary).toBe(false);
  });

  it('refuses a message over the limit from its prefix, before any of it, as grpc-js does', () => {
    const recorder = new Recorder();
    const framer = new MessageFramer(recorder, 10);
    const error = (() => {
      try {
        framer.write(framed(Buffer.alloc(11)).subarray(0, 5));
      } catch (err) {
        return err as FramingError;
      }
      throw new Error('expected a FramingError');
    })();
    expect(error).toBeInstanceOf(FramingError);
    expect(error.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(error.message).toBe('Received message larger than max (11 vs 10)');
    expect(recorder.messages).toEqual([]);
  });

  it('reads a message with the compressed flag as it is, as grpc-js does on an identity call', () => {
    const recorder = new Recorder();
    const framer = new MessageFramer(recorder, 100);
    framer.write(framed(Buffer.from('x'), 1));
    framer.write(framed(Buffer.from('y'), 7));
    expect(recorder.messages).toEqual([Buffer.from('x'), Buffer.from('y')]);
  });

  it('keeps a message that came in one piece as that piece (WholeMessage)', () => {
    const whole = new WholeMessage();
    const framer = new MessageFramer(whole, 100);
    const chunk = framed(Buffer.from('hello'));
    framer.write(chunk);
    expect(whole.message.toString()).toBe('hello');
    expect(whole.message.buffer).toBe(chunk.buffer);
    feed(framer, framed(Buffer.from('split in three')), [0.3, 0.6]);
    expect(whole.message.toString()).toBe('split in three');
  });
});
