import {
  enumType,
  messageType,
  type GradientChunk__Output,
  type RequestContext__Output,
  type SparseGrad__Output,
} from '@pserver/proto';
import { copyIntoShared } from '@pserver/optimizer';
import type { MessageSink } from '@pserver/rpc';
import type { Placement } from '../../service/push-staging';

/**
 * Where a gradient's bytes may be written as they arrive: the place they will be applied from
 * (`PushStaging.placeFor`), told as they land, or undefined to keep them aside.
 */
export type PlaceGradient = (
  name: string,
  offset: number,
  byteLength: number,
) => Placement | undefined;

/** One push message as protobufjs decodes it: SendGradsRequest (offsets 0) or SendGradsChunk. */
export interface DecodedPush {
  context: RequestContext__Output | null;
  grads: GradientChunk__Output[];
  sparse: SparseGrad__Output[];
  /** Present only when the message carries it (a proto3 `optional`), as protobufjs gives it. */
  sampleCount?: number;
  _sampleCount?: 'sampleCount';
}

/**
 * The message's kind: which gradient message it carries in field 2 (`Tensor` in a
 * SendGradsRequest, `GradientChunk` in a SendGradsChunk; both have name 1, element_type 2 and
 * content 4), and how protobufjs decodes it whole, for messages read as they are.
 */
export interface PushLayout {
  shapeField: number;
  offsetField: number | undefined;
  /** The server's own decoder of the message (proto-loader's; an unparsable message returns a value that is not a push). */
  decodeWhole: (bytes: Buffer) => unknown;
}

const enum Reading {
  Tag,
  Varint,
  Length,
  /** A length-delimited or fixed-size field's bytes, kept in the skeleton. */
  Field,
  /** A gradient's content, into its place or aside. */
  Content,
  /** Everything after the reading gave up: kept for the whole-message decoder. */
  Raw,
}

const enum Frame {
  Top,
  Gradient,
  Context,
  Sparse,
}

const wire = { varint: 0, i64: 1, len: 2, i32: 5 } as const;
const elementTypeNames = enumType('ElementType').valuesById;

/**
 * The declarations this decoder reads by hand, as `name:id:type[:repeated]`. Checked against the
 * contract when the module loads: a field added to one of these messages must be taught here
 * first, or the pserver refuses to start instead of dropping it.
 */
const readByHand: Record<string, string> = {
  SendGradsRequest:
    'context:1:RequestContext grads:2:Tensor:repeated sparse:3:SparseGrad:repeated sampleCount:4:uint64',
  SendGradsChunk:
    'context:1:RequestContext grads:2:GradientChunk:repeated sparse:3:SparseGrad:repeated sampleCount:4:uint64',
  Tensor: 'name:1:string elementType:2:ElementType shape:3:uint64:repeated content:4:bytes',
  GradientChunk:
    'name:1:string elementType:2:ElementType offset:3:uint64 content:4:bytes shape:5:uint64:repeated',
  RequestContext: 'trainerId:1:uint64 pass:2:uint64 step:3:uint64 shardEpoch:4:uint64',
  SparseGrad: 'table:1:string ids:2:bytes grads:3:bytes counts:4:bytes',
};
for (const [name, expected] of Object.entries(readByHand)) {
  const declared = messageType(name)
    .fieldsArray.map((f) => `${f.name}:${f.id}:${f.type}${f.repeated ? ':repeated' : ''}`)
    .join(' ');
  if (declared !== expected)
    throw new Error(
      `push-decoder: pserver.v1.${name} is declared as "${declared}", the data path reads "${expected}": teach push-decoder.ts the change`,
    );
}

interface Gradient {
  name: string;
  elementType: number;
  shape: number[];
  offset: number;
  content: Uint8Array;
  /** Its content went into a place, handed out for its name and offset as they were then. */
  placed: boolean;
}

interface Slice {
  table: string;
  /** [start, end) ranges of the skeleton. */
  ids: [number, number];
  grads: [number, number];
  counts: [number, number];
}

/**
 * Decodes push messages as their bytes arrive, writing each gradient's content straight to
 * where it will be applied from when `place` offers a place: no message buffer, no copy of the
 * gradient but that one. Every other byte of the message (the skeleton: tags, lengths, names,
 * the context, row slices) is kept, in order.
 *
 * It reads the messages writers produce — each field of the wire type its declaration gives,
 * each varint of its proper length, each field inside the message that holds it — and decodes
 * them to exactly what protobufjs gives with the project's loader options. A message outside
 * that form (a group, a wire type that does not match, a field overrunning its message, an
 * over-long varint: protobufjs has leniencies for each) is not interpreted here: its bytes are
 * put back together (the skeleton with the contents in place) and decoded whole by the server's
 * own decoder, so the data path accepts and refuses exactly the messages grpc-js would, and
 * decodes them to the same values. `onMessage` gets the push, or the undecodable result.
 */
export class PushDecoder implements MessageSink {
  private reading = Reading.Tag;
  private pos = 0;
  private length = 0;
  private lo = 0;
  private hi = 0;
  private varintBytes = 0;
  private field = 0;
  private wireType = 0;
  private remaining = 0;
  private frame = Frame.Top;
  private frameEnd = 0;
  private fieldStart = 0;
  private skeleton: Buffer = empty;
  private skeletonLength = 0;
  /** Gradient contents, in the order they came, with where they sit among the skeleton's bytes. */
  private contents: { at: number; bytes: Uint8Array }[] = [];
  private contentTarget: Uint8Array = empty;
  private contentPlacement: Placement | undefined;
  private contentFill = 0;
  /** Why the reading gave up, if it did. */
  private unusual: string | undefined;
  private context: RequestContext__Output | null = null;
  private sampleCount: number | undefined;
  private nestedContext: RequestContext__Output | undefined;
  private gradients: Gradient[] = [];
  private gradient: Gradient | undefined;
  private slices: Slice[] = [];
  private slice: Slice | undefined;

  constructor(
    private readonly layout: PushLayout,
    private readonly place: PlaceGradient | undefined,
    private readonly onMessage: (message: DecodedPush | { undecodable: unknown }) => void,
  ) {}

  begin(length: number): void {
    this.reading = Reading.Tag;
    this.pos = 0;
    this.length = length;
    this.varintBytes = 0;
    this.frame = Frame.Top;
    this.frameEnd = length;
    this.skeleton = Buffer.allocUnsafe(Math.min(256, length) || 1);
    this.skeletonLength = 0;
    this.contents = [];
    this.unusual = undefined;
    this.context = null;
    this.sampleCount = undefined;
    this.gradients = [];
    this.gradient = undefined;
    this.slices = [];
    this.slice = undefined;
  }

  bytes(piece: Buffer): void {
    const n = piece.length;
    let i = 0;
    while (i < n) {
      switch (this.reading) {
        case Reading.Content: {
          const k = Math.min(this.remaining, n - i);
          copyIntoShared(
            this.contentTarget,
            this.contentFill,
            k === n ? piece : piece.subarray(i, i + k),
          );
          this.contentFill += k;
          this.contentPlacement?.written(this.contentFill);
          i += k;
          this.advance(k);
          break;
        }
        case Reading.Field: {
          const k = Math.min(this.remaining, n - i);
          this.keep(piece, i, i + k);
          i += k;
          this.advance(k);
          break;
        }
        case Reading.Raw:
          this.keep(piece, i, n);
          this.pos += n - i;
          i = n;
          break;
        default: {
          const byte = piece[i++]!;
          if (this.skeletonLength === this.skeleton.length) this.grow(this.skeletonLength + 1);
          this.skeleton[this.skeletonLength++] = byte;
          this.pos++;
          this.varintByte(byte);
        }
      }
    }
  }

  end(): void {
    if (this.unusual === undefined && (this.reading !== Reading.Tag || this.varintBytes > 0))
      this.unusual = 'the message ends inside a field';
    if (this.unusual !== undefined) return this.onMessage(this.decodeWhole());
    const skeleton = this.skeleton;
    const range = ([start, end]: [number, number]): Buffer =>
      start === end ? Buffer.alloc(0) : skeleton.subarray(start, end);
    this.onMessage({
      context: this.context,
      // A Tensor has no offset: protobufjs gives none, and neither does this.
      grads: this.gradients.map(({ name, elementType, shape, offset, content }) => ({
        name,
        elementType: (elementTypeNames[elementType] ??
          elementType) as GradientChunk__Output['elementType'],
        shape,
        ...(this.layout.offsetField !== undefined && { offset }),
        content: content as Buffer,
      })) as GradientChunk__Output[],
      sparse: this.slices.map(({ table, ids, grads, counts }) => ({
        table,
        ids: range(ids),
        grads: range(grads),
        counts: range(counts),
      })),
      ...(this.sampleCount !== undefined && {
        sampleCount: this.sampleCount,
        _sampleCount: 'sampleCount' as const,
      }),
    });
  }

  /** The message put back together and decoded by the server's own decoder. */
  private decodeWhole(): DecodedPush | { undecodable: unknown } {
    const whole = Buffer.allocUnsafe(this.length);
    let from = 0;
    let at = 0;
    for (const { at: before, bytes } of this.contents) {
      at += this.skeleton.copy(whole, at, from, before);
      whole.set(bytes, at);
      at += bytes.byteLength;
      from = before;
    }
    this.skeleton.copy(whole, at, from, this.skeletonLength);
    const decoded = this.layout.decodeWhole(whole);
    return isPush(decoded) ? decoded : { undecodable: decoded };
  }

  /** Appends bytes to the skeleton. */
  private keep(piece: Buffer, start: number, end: number): void {
    const needed = this.skeletonLength + end - start;
    if (needed > this.skeleton.length) this.grow(needed);
    this.skeletonLength += piece.copy(this.skeleton, this.skeletonLength, start, end);
  }

  private grow(needed: number): void {
    const grown = Buffer.allocUnsafe(
      Math.min(this.length, Math.max(needed, this.skeleton.length * 2)),
    );
    this.skeleton.copy(grown, 0, 0, this.skeletonLength);
    this.skeleton = grown;
  }

  /** From now on the bytes are only kept: the whole-message decoder will decide. */
  private giveUp(reason: string): void {
    this.unusual = reason;
    this.reading = Reading.Raw;
  }

  private advance(k: number): void {
    this.pos += k;
    this.remaining -= k;
    if (this.remaining === 0) this.fieldRead();
  }

  private varintByte(byte: number): void {
    const bits = byte & 0x7f;
    const at = this.varintBytes++;
    if (at === 0) {
      this.lo = bits;
      this.hi = 0;
    } else if (at < 4) {
      this.lo = (this.lo | (bits << (7 * at))) >>> 0;
    } else if (at === 4) {
      this.lo = (this.lo | (bits << 28)) >>> 0;
      this.hi = bits >>> 4;
    } else {
      this.hi = (this.hi | (bits << (7 * at - 32))) >>> 0;
    }
    // protobufjs reads tags, lengths and enums as 32-bit varints (5 bytes) and 64-bit values in
    // at most 10: anything longer it reads its own way.
    const limit = this.reading === Reading.Varint && this.is64BitField() ? 10 : 5;
    if (byte & 0x80) {
      if (this.varintBytes >= limit) this.giveUp('an over-long varint');
      return;
    }
    this.varintBytes = 0;
    if (this.pos > this.frameEnd) return this.giveUp('a varint overruns its message');
    if (this.reading === Reading.Tag) this.tagRead();
    else if (this.reading === Reading.Varint) this.varintRead();
    else this.lengthRead();
  }

  private tagRead(): void {
    this.field = this.lo >>> 3;
    this.wireType = this.lo & 7;
    if (this.field === 0) return this.giveUp('field number 0');
    const expected = this.expectedWireType();
    if (expected === 'shape') {
      if (this.wireType !== wire.varint && this.wireType !== wire.len)
        return this.giveUp('a shape of the wrong wire type');
    } else if (expected !== undefined && this.wireType !== expected) {
      return this.giveUp('a field of the wrong wire type');
    }
    switch (this.wireType) {
      case wire.varint:
        this.reading = Reading.Varint;
        return;
      case wire.len:
        this.reading = Reading.Length;
        return;
      case wire.i64:
        return this.keepField(8);
      case wire.i32:
        return this.keepField(4);
      default:
        return this.giveUp('a group or an invalid wire type');
    }
  }

  /** The wire type a known field has: undefined for an unknown field, 'shape' for varint or packed. */
  private expectedWireType(): number | 'shape' | undefined {
    const field = this.field;
    switch (this.frame) {
      case Frame.Top:
        if (field === 4) return wire.varint;
        return field <= 3 ? wire.len : undefined;
      case Frame.Context:
        return field <= 4 ? wire.varint : undefined;
      case Frame.Sparse:
        return field <= 4 ? wire.len : undefined;
      case Frame.Gradient:
        if (field === 1 || field === 4) return wire.len;
        if (field === 2 || field === this.layout.offsetField) return wire.varint;
        if (field === this.layout.shapeField) return 'shape';
        return undefined;
    }
  }

  private is64BitField(): boolean {
    if (this.frame === Frame.Context) return this.field <= 4;
    if (this.frame === Frame.Top) return this.field === 4;
    if (this.frame !== Frame.Gradient) return false;
    return this.field === this.layout.offsetField || this.field === this.layout.shapeField;
  }

  private varintRead(): void {
    const value = this.hi * 4_294_967_296 + this.lo;
    if (this.frame === Frame.Gradient) {
      const gradient = this.gradient!;
      if (this.field === 2) gradient.elementType = this.lo | 0;
      else if (this.field === this.layout.offsetField) {
        // A place was handed out for the offset as it was: that piece is another one now.
        if (gradient.placed) return this.giveUp('an offset after the bytes it places');
        gradient.offset = value;
      } else if (this.field === this.layout.shapeField) gradient.shape.push(value);
    } else if (this.frame === Frame.Context && this.field <= 4) {
      const context = this.nestedContext!;
      if (this.field === 1) context.trainerId = value;
      else if (this.field === 2) context.pass = value;
      else if (this.field === 3) context.step = value;
      else context.shardEpoch = value;
    } else if (this.frame === Frame.Top && this.field === 4) {
      this.sampleCount = value;
    }
    this.fieldRead();
  }

  private lengthRead(): void {
    const length = this.lo;
    if (this.pos + length > this.frameEnd) return this.giveUp('a field overruns its message');
    if (this.frame === Frame.Top && this.field <= 3) {
      this.frame = [Frame.Top, Frame.Context, Frame.Gradient, Frame.Sparse][this.field]!;
      this.frameEnd = this.pos + length;
      if (this.frame === Frame.Context)
        this.nestedContext = { trainerId: 0, pass: 0, step: 0, shardEpoch: 0 };
      else if (this.frame === Frame.Gradient)
        this.gradient = {
          name: '',
          elementType: 0,
          shape: [],
          offset: 0,
          content: empty,
          placed: false,
        };
      else this.slice = { table: '', ids: [0, 0], grads: [0, 0], counts: [0, 0] };
      return this.fieldRead();
    }
    if (this.frame === Frame.Gradient && this.field === 4) return this.receiveContent(length);
    this.keepField(length);
  }

  private keepField(length: number): void {
    if (this.pos + length > this.frameEnd) return this.giveUp('a field overruns its message');
    this.fieldStart = this.skeletonLength;
    this.remaining = length;
    this.reading = Reading.Field;
    if (length === 0) this.fieldRead();
  }

  /** A gradient's content: into its place when one is offered (its name came first), else aside. */
  private receiveContent(length: number): void {
    const gradient = this.gradient!;
    const placed =
      length > 0 && gradient.name !== ''
        ? this.place?.(gradient.name, gradient.offset, length)
        : undefined;
    this.contentPlacement = placed;
    gradient.placed ||= placed !== undefined;
    this.contentTarget = placed?.bytes ?? (length > 0 ? Buffer.allocUnsafe(length) : empty);
    this.contentFill = 0;
    gradient.content = this.contentTarget;
    this.contents.push({ at: this.skeletonLength, bytes: this.contentTarget });
    this.remaining = length;
    this.reading = Reading.Content;
    if (length === 0) this.fieldRead();
  }

  /** A field ended: interpret a kept one, and close the message it ends. */
  private fieldRead(): void {
    if (this.reading === Reading.Field && this.wireType === wire.len) this.keptFieldRead();
    if (this.unusual !== undefined) return;
    this.reading = Reading.Tag;
    if (this.frame === Frame.Top || this.pos < this.frameEnd) return;
    if (this.frame === Frame.Context) this.context = this.nestedContext!;
    else if (this.frame === Frame.Gradient) this.gradients.push(this.gradient!);
    else this.slices.push(this.slice!);
    this.frame = Frame.Top;
    this.frameEnd = this.length;
  }

  private keptFieldRead(): void {
    const start = this.fieldStart;
    const end = this.skeletonLength;
    if (this.frame === Frame.Gradient) {
      if (this.field === 1) {
        if (this.gradient!.placed) return this.giveUp('a name after the bytes it places');
        this.gradient!.name = this.skeleton.toString('utf8', start, end);
      } else if (this.field === this.layout.shapeField) this.readPackedShape(start, end);
    } else if (this.frame === Frame.Sparse) {
      const slice = this.slice!;
      if (this.field === 1) slice.table = this.skeleton.toString('utf8', start, end);
      else if (this.field === 2) slice.ids = [start, end];
      else if (this.field === 3) slice.grads = [start, end];
      else if (this.field === 4) slice.counts = [start, end];
    }
  }

  private readPackedShape(start: number, end: number): void {
    let lo = 0;
    let hi = 0;
    let at = 0;
    for (let i = start; i < end; i++) {
      const byte = this.skeleton[i]!;
      const bits = byte & 0x7f;
      if (at === 0) {
        lo = bits;
        hi = 0;
      } else if (at < 4) lo = (lo | (bits << (7 * at))) >>> 0;
      else if (at === 4) {
        lo = (lo | (bits << 28)) >>> 0;
        hi = bits >>> 4;
      } else hi = (hi | (bits << (7 * at - 32))) >>> 0;
      at++;
      if (byte & 0x80) {
        if (at >= 10) return this.giveUp('an over-long varint in a packed shape');
        continue;
      }
      this.gradient!.shape.push(hi * 4_294_967_296 + lo);
      at = 0;
    }
    if (at !== 0) this.giveUp('a packed shape ends inside a varint');
  }
}

const empty = Buffer.alloc(0);

function isPush(value: unknown): value is DecodedPush {
  return typeof value === 'object' && value !== null && Array.isArray((value as DecodedPush).grads);
}
