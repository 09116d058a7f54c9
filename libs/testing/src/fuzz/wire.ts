import fc from 'fast-check';
import { messageType } from '@pserver/proto';
import { Enum, Type, Writer } from 'protobufjs';

/**
 * Messages as the fuzzers generate them: plain objects in protobufjs's shape (camelCase fields,
 * enums as numbers so that unknown values can be sent), with 64-bit fields as bigints and large
 * values as compact descriptors that are expanded only when the message is encoded. A failing
 * case then prints in a few lines instead of megabytes.
 */

/** A deterministic stream of 32-bit values (mulberry32), for filling large values from a seed. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A string of `unit` repeated `times` times. */
export class Repeated {
  constructor(
    readonly unit: string,
    readonly times: number,
  ) {}

  expand(): string {
    return this.unit.repeat(this.times);
  }

  [fc.toStringMethod](): string {
    return `Repeated(${JSON.stringify(this.unit)} × ${this.times})`;
  }
}

/** A list of `length` elements cycling through `items`. */
export class RepeatedList<T> {
  constructor(
    readonly items: readonly T[],
    readonly length: number,
  ) {}

  expand(): T[] {
    return Array.from({ length: this.length }, (_, i) => this.items[i % this.items.length]!);
  }

  [fc.toStringMethod](): string {
    return `RepeatedList(${fc.stringify(this.items)} cycled to ${this.length})`;
  }
}

/** How the bytes of a tensor's content are filled. */
export type Fill =
  /** Small finite values of the element type the content is read as. */
  | 'finite'
  /** Like finite, with one NaN (a quiet NaN, or a signalling NaN with a payload). */
  | 'nan'
  | 'signalling-nan'
  /** Like finite, with one +Infinity or -Infinity. */
  | 'infinity'
  /** The largest finite values, whose squares overflow. */
  | 'huge'
  /** Subnormal values and negative zero. */
  | 'tiny'
  | 'zeros'
  /** Bytes from the seed, whatever they mean. */
  | 'random';

export const fills: readonly Fill[] = [
  'finite',
  'nan',
  'signalling-nan',
  'infinity',
  'huge',
  'tiny',
  'zeros',
  'random',
];

/** `length` bytes filled as `fill` for elements of `elementBytes` bytes (8: float64, 4: float32). */
export class Content {
  constructor(
    readonly length: number,
    readonly fill: Fill,
    readonly seed: number,
    readonly elementBytes: 2 | 4 | 8 = 4,
  ) {}

  expand(): Uint8Array {
    const bytes = new Uint8Array(this.length);
    const next = prng(this.seed);
    if (this.fill === 'zeros') return bytes;
    if (this.fill === 'random') {
      const words = new Uint32Array(bytes.buffer, 0, this.length >>> 2);
      for (let i = 0; i < words.length; i++) words[i] = next();
      for (let i = words.length * 4; i < this.length; i++) bytes[i] = next() & 0xff;
      return bytes;
    }
    // Typed arrays write the platform's byte order: little-endian, as on every supported one.
    const size = this.elementBytes;
    const count = Math.floor(this.length / size);
    if (count === 0) return bytes;
    const values =
      size === 8
        ? new Float64Array(bytes.buffer, 0, count)
        : size === 4
          ? new Float32Array(bytes.buffer, 0, count)
          : undefined;
    if (!values) {
      // Two-byte types: bit patterns of finite half-precision numbers.
      const halves = new Uint16Array(bytes.buffer, 0, count);
      for (let i = 0; i < count; i++) halves[i] = next() & 0x3bff;
    } else if (this.fill === 'huge') values.fill(size === 8 ? 1.7e308 : 3.4e38);
    else if (this.fill === 'tiny') values.fill(size === 8 ? 5e-324 : 1.4e-45);
    else for (let i = 0; i < count; i++) values[i] = (next() / 0x1_0000_0000 - 0.5) * 2;
    const at = next() % count;
    const view = new DataView(bytes.buffer);
    if (this.fill === 'nan' && values) values[at] = Number.NaN;
    if (this.fill === 'infinity' && values)
      values[at] = at % 2 ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    if (this.fill === 'signalling-nan') {
      // A signalling NaN with a payload: exponent all ones, quiet bit clear, payload non-zero.
      if (size === 8) view.setBigUint64(at * 8, 0x7ff4_0000_dead_beefn, true);
      else if (size === 4) view.setUint32(at * 4, 0x7fa0_beef, true);
      else view.setUint16(at * 2, 0x7d01, true);
    }
    if (this.fill === 'tiny' && values) values[at] = -0;
    return bytes;
  }

  [fc.toStringMethod](): string {
    return `Content(${this.length} bytes, ${this.fill}, seed ${this.seed}, ${this.elementBytes}-byte elements)`;
  }
}

const uint64Mask = (1n << 64n) - 1n;

/**
 * The message as protobufjs encodes it: descriptors expanded, bigints as {low, high} pairs (which
 * protobufjs writes as exact 64-bit varints; a JS number above 2^53 would be rounded first).
 */
export function toWire(value: unknown): unknown {
  if (typeof value === 'bigint') {
    const bits = value & uint64Mask;
    return {
      low: Number(bits & 0xffff_ffffn) | 0,
      high: Number(bits >> 32n) | 0,
      unsigned: true,
    };
  }
  if (value instanceof Repeated || value instanceof Content) return value.expand();
  // Each distinct element is expanded once, however often it repeats.
  if (value instanceof RepeatedList)
    return new RepeatedList(value.items.map(toWire), value.length).expand();
  if (value instanceof Uint8Array || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(toWire);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toWire(v)]));
}

/** Encodes a generated message of `pserver.v1.<typeName>`. */
export function encodeMessage(typeName: string, message: object): Buffer {
  return Buffer.from(encodeAs(messageType(typeName), message));
}

const holdsRepeats = (value: unknown): boolean =>
  value instanceof RepeatedList ||
  (typeof value === 'object' &&
    value !== null &&
    !(value instanceof Uint8Array) &&
    Object.values(value).some(holdsRepeats));

/**
 * Encodes `message` as `type`. A message is the concatenation of its fields' encodings, so the
 * fields holding a `RepeatedList` are encoded apart: each distinct element once, its bytes then
 * repeated (a list of scalars as one packed run). Hundreds of thousands of elements then cost
 * a copy, not hundreds of thousands of protobufjs writes.
 */
function encodeAs(type: Type, message: object): Uint8Array {
  const plain: Record<string, unknown> = {};
  const parts: Uint8Array[] = [];
  for (const [key, value] of Object.entries(message)) {
    const field = type.fields[key];
    if (!field || !holdsRepeats(value)) {
      plain[key] = value;
      continue;
    }
    const sub = field.resolve().resolvedType;
    if (value instanceof RepeatedList) parts.push(encodeRepeated(field.id, field.type, sub, value));
    else if (sub instanceof Type && Array.isArray(value))
      parts.push(...value.map((item: object) => delimited(field.id, encodeAs(sub, item))));
    else if (sub instanceof Type) parts.push(delimited(field.id, encodeAs(sub, value as object)));
    else plain[key] = value;
  }
  return Buffer.concat([type.encode(toWire(plain) as Record<string, unknown>).finish(), ...parts]);
}

function encodeRepeated(
  id: number,
  scalar: string,
  sub: Type | Enum | null,
  list: RepeatedList<unknown>,
): Uint8Array {
  const packed = !(sub instanceof Type) && scalar !== 'string' && scalar !== 'bytes';
  const items = list.items.map((item): Uint8Array => {
    if (sub instanceof Type) return delimited(id, encodeAs(sub, item as object));
    const writer = Writer.create();
    if (!packed) writer.uint32((id << 3) | 2);
    const method = (sub instanceof Enum ? 'int32' : scalar) as 'uint64';
    writer[method](toWire(item) as number);
    return writer.finish();
  });
  const whole = Math.floor(list.length / items.length);
  const cycle = Buffer.concat(items);
  const body = Buffer.concat([
    ...Array<Uint8Array>(whole).fill(cycle),
    ...items.slice(0, list.length - whole * items.length),
  ]);
  return packed ? delimited(id, body) : body;
}

/** A length-delimited field: tag, length, bytes. */
function delimited(id: number, bytes: Uint8Array): Uint8Array {
  const head = Writer.create()
    .uint32((id << 3) | 2)
    .uint32(bytes.length)
    .finish();
  return Buffer.concat([head, bytes]);
}

/** Decodes an answer's bytes as `pserver.v1.<typeName>`, as the loader options would. */
export function decodeMessage(typeName: string, bytes: Uint8Array): Record<string, unknown> {
  const type = messageType(typeName);
  return type.toObject(type.decode(bytes), {
    longs: String,
    enums: String,
    defaults: true,
  });
}

/** One change to an encoded message; positions are taken modulo the length. */
export type Mutation =
  | { op: 'flip'; at: number; bit: number }
  | { op: 'set'; at: number; byte: number }
  | { op: 'truncate'; at: number }
  | { op: 'delete'; at: number; count: number }
  | { op: 'insert'; at: number; bytes: Uint8Array }
  | { op: 'duplicate'; from: number; count: number }
  /** Appends bytes after the message: unknown fields, or anything. */
  | { op: 'append'; bytes: Uint8Array | LazyBytes };

/** Applies mutations in order to a copy of `bytes`. */
export function mutate(bytes: Uint8Array, mutations: readonly Mutation[]): Buffer {
  let out = Buffer.from(bytes);
  for (const m of mutations) {
    const at = (n: number): number => (out.length === 0 ? 0 : n % (out.length + 1));
    switch (m.op) {
      case 'flip':
        if (out.length > 0) out[m.at % out.length]! ^= 1 << (m.bit & 7);
        break;
      case 'set':
        if (out.length > 0) out[m.at % out.length] = m.byte & 0xff;
        break;
      case 'truncate':
        out = out.subarray(0, at(m.at));
        break;
      case 'delete': {
        const start = at(m.at);
        out = Buffer.concat([out.subarray(0, start), out.subarray(start + m.count)]);
        break;
      }
      case 'insert': {
        const start = at(m.at);
        out = Buffer.concat([out.subarray(0, start), m.bytes, out.subarray(start)]);
        break;
      }
      case 'duplicate': {
        const start = at(m.from);
        out = Buffer.concat([out, out.subarray(start, start + m.count)]);
        break;
      }
      case 'append':
        out = Buffer.concat([out, bytesOf(m.bytes)]);
        break;
    }
  }
  return out;
}

/** Writes a varint (up to 64 bits), as protobuf does. */
function varint(value: bigint): number[] {
  const out: number[] = [];
  let v = value & uint64Mask;
  do {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v > 0n ? byte | 0x80 : byte);
  } while (v > 0n);
  return out;
}

const tag = (field: number, wireType: number): number[] =>
  varint((BigInt(field) << 3n) | BigInt(wireType));

/** Bytes made on demand from a short description (a large value prints as its description). */
export class LazyBytes {
  constructor(
    readonly description: string,
    private readonly make: () => Uint8Array,
  ) {}

  expand(): Uint8Array {
    return this.make();
  }

  [fc.toStringMethod](): string {
    return `LazyBytes(${this.description})`;
  }
}

const bytesOf = (b: Uint8Array | LazyBytes): Uint8Array =>
  b instanceof LazyBytes ? b.expand() : b;

/**
 * Encodings a message may legally or nearly contain and a hand-written encoder rarely makes:
 * unknown fields of every wire type, deeply nested groups, varints padded to ten bytes, a length
 * prefix far beyond the end, a field number 0, an end-group without a start.
 */
export const oddEncodings: fc.Arbitrary<Uint8Array | LazyBytes> = fc.oneof(
  fc
    .record({ field: fc.integer({ min: 1, max: 536_870_911 }), value: fc.bigInt(0n, uint64Mask) })
    .map(({ field, value }) => Uint8Array.from([...tag(field, 0), ...varint(value)])),
  fc
    .record({ field: fc.integer({ min: 1, max: 100 }), payload: fc.uint8Array({ maxLength: 64 }) })
    .map(({ field, payload }) =>
      Uint8Array.from([...tag(field, 2), ...varint(BigInt(payload.length)), ...payload]),
    ),
  fc
    .record({
      field: fc.integer({ min: 1, max: 100 }),
      depth: fc.integer({ min: 1, max: 200_000 }),
    })
    .map(
      ({ field, depth }) =>
        // Nested groups: what recursive decoders overflow their stack on.
        new LazyBytes(`field ${field} as ${depth} nested groups`, () => {
          const open = tag(field, 3);
          const close = tag(field, 4);
          const out = new Uint8Array(depth * (open.length + close.length));
          for (let i = 0; i < depth; i++) out.set(open, i * open.length);
          for (let i = 0; i < depth; i++) out.set(close, depth * open.length + i * close.length);
          return out;
        }),
    ),
  fc
    .record({ field: fc.integer({ min: 1, max: 10 }), value: fc.bigInt(0n, 127n) })
    .map(({ field, value }) =>
      // A small value padded to a ten-byte varint (still valid), then an eleven-byte one (not).
      Uint8Array.from([
        ...tag(field, 0),
        0x80 | Number(value),
        ...Array<number>(8).fill(0x80),
        0x00,
        ...tag(field, 0),
        ...Array<number>(10).fill(0xff),
        0x01,
      ]),
    ),
  fc
    .record({ field: fc.integer({ min: 1, max: 10 }), claimed: fc.bigInt(1n << 20n, uint64Mask) })
    .map(({ field, claimed }) => Uint8Array.from([...tag(field, 2), ...varint(claimed), 1, 2, 3])),
  fc.constantFrom(
    Uint8Array.from([0x00]), // field 0
    Uint8Array.from([0x0c]), // end group 1 without a start
    Uint8Array.from([0x0e, 0x01]), // wire type 6
    Uint8Array.from([0x0f]), // wire type 7
    Uint8Array.from([0x09, 1, 2, 3]), // fixed64 cut short
    Uint8Array.from([0x0d, 1]), // fixed32 cut short
  ),
);

/** Mutations of an encoded message. */
export const mutations: fc.Arbitrary<Mutation[]> = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({ op: fc.constant('flip' as const), at: fc.nat(), bit: fc.nat(7) }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ op: fc.constant('set' as const), at: fc.nat(), byte: fc.nat(255) }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }) },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('delete' as const),
        at: fc.nat(),
        count: fc.integer({ min: 1, max: 16 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('insert' as const),
        at: fc.nat(),
        bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('duplicate' as const),
        from: fc.nat(),
        count: fc.integer({ min: 1, max: 4096 }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ op: fc.constant('append' as const), bytes: oddEncodings }),
    },
  ),
  { minLength: 1, maxLength: 4 },
);

/** What a fuzzer sends as one request message: a generated message, mutated or not, or junk. */
export type FuzzInput<V> =
  | { kind: 'message'; value: V }
  | { kind: 'mutated'; value: V; mutations: Mutation[] }
  | { kind: 'bytes'; bytes: Uint8Array | LazyBytes };

/**
 * Mostly generated messages (structurally valid, extreme values), then their encodings mutated,
 * then random bytes and odd encodings alone.
 */
export function fuzzInputs<V>(values: fc.Arbitrary<V>): fc.Arbitrary<FuzzInput<V>> {
  return fc.oneof(
    { weight: 6, arbitrary: values.map((value) => ({ kind: 'message' as const, value })) },
    {
      weight: 3,
      arbitrary: fc
        .record({ value: values, mutations })
        .map(({ value, mutations }) => ({ kind: 'mutated' as const, value, mutations })),
    },
    {
      weight: 1,
      arbitrary: fc
        .oneof(fc.uint8Array({ maxLength: 256 }), oddEncodings)
        .map((bytes) => ({ kind: 'bytes' as const, bytes })),
    },
  );
}

/** The bytes of an input, `encode` turning a generated message into its encoding. */
export function inputBytes<V>(input: FuzzInput<V>, encode: (value: V) => Uint8Array): Buffer {
  switch (input.kind) {
    case 'message':
      return Buffer.from(encode(input.value));
    case 'mutated':
      return mutate(encode(input.value), input.mutations);
    case 'bytes':
      return Buffer.from(bytesOf(input.bytes));
  }
}
