import fc from 'fast-check';
import { messageType } from '@pserver/proto';
import { parameterServerService, UnparsableRequest } from '@pserver/rpc';
import {
  bytesAsHex,
  sendGradsStreamTarget,
  sendGradsTarget,
  type PserverFuzzModel,
  type RpcTarget,
} from '@pserver/testing';
import { isElementTypeName } from '@pserver/proto';
import { Shard } from '../../shard/shard';
import { StagedPush, type Placement } from '../../shard/staged-push';
import { StoredTensor } from '../../shard/stored-tensor';
import { PushDecoder, type DecodedPush, type PushLayout } from './push-decoder';

const definition = parameterServerService;

const layouts: Record<'SendGrads' | 'SendGradsStream', PushLayout> = {
  SendGrads: {
    shapeField: 3,
    offsetField: undefined,
    decodeWhole: (bytes) => definition.SendGrads.requestDeserialize(bytes),
  },
  SendGradsStream: {
    shapeField: 5,
    offsetField: 3,
    decodeWhole: (bytes) => definition.SendGradsStream.requestDeserialize(bytes),
  },
};

const model: PserverFuzzModel = {
  epoch: 3n,
  namesHere: ['fresh'],
  namesElsewhere: [],
  tensors: [
    { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', byteLength: 64 },
    { name: 'v', elementType: 'ELEMENT_TYPE_FLOAT32', byteLength: 64 },
    { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT64', byteLength: 24 },
    { name: 'ids', elementType: 'ELEMENT_TYPE_INT64', byteLength: 16 },
  ],
  tables: [{ name: 'emb', dim: 4, idsHere: [1n, 2n, -3n], idsElsewhere: [9n] }],
  trainers: [7n],
  shard: { index: 0, count: 1 },
};

/**
 * Places as `StagedPush.placeFor` hands them out: views of one arena, never overlapping for a
 * name, each a fresh region.
 */
class Places {
  readonly arena = new ArrayBuffer(1 << 22);
  private used = 0;
  private readonly ends = new Map<string, number>();

  /** Bytes reported written, by place. */
  readonly written = new Map<Uint8Array, number>();

  place = (name: string, offset: number, byteLength: number): Placement | undefined => {
    if (offset < (this.ends.get(name) ?? 0) || this.used + byteLength > this.arena.byteLength)
      return undefined;
    this.ends.set(name, offset + byteLength);
    const bytes = new Uint8Array(this.arena, this.used, byteLength);
    this.used += byteLength;
    return { bytes, written: (count) => this.written.set(bytes, count) };
  };
}

/** Feeds `bytes` to a decoder in pieces cut at `cuts`; returns what it decoded. */
function decodeInPieces(
  method: keyof typeof layouts,
  bytes: Buffer,
  cuts: number[],
  places: Pick<Places, 'place'> = new Places(),
  wholes: Buffer[] = [],
): DecodedPush | { undecodable: unknown } {
  const layout = layouts[method];
  let result: DecodedPush | { undecodable: unknown } | undefined;
  const decoder = new PushDecoder(
    {
      ...layout,
      decodeWhole: (whole) => {
        wholes.push(Buffer.from(whole));
        return layout.decodeWhole(whole);
      },
    },
    places.place,
    (message) => (result = message),
  );
  decoder.begin(bytes.length);
  const bounds = [...new Set([0, ...cuts.map((c) => Math.floor(c * bytes.length)), bytes.length])];
  bounds.sort((a, b) => a - b);
  for (let i = 1; i < bounds.length; i++) decoder.bytes(bytes.subarray(bounds[i - 1], bounds[i]));
  decoder.end();
  if (!result) throw new Error('the decoder gave no message');
  return result;
}

/** Every message a fuzz target sends, as bytes. */
function messagesOf<I>(target: RpcTarget<I>): fc.Arbitrary<Buffer[]> {
  return target.inputs.map((input) => target.send(input).messages);
}

const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 });

describe('PushDecoder', () => {
  it.each([
    ['SendGrads', messagesOf(sendGradsTarget(model))],
    ['SendGradsStream', messagesOf(sendGradsStreamTarget(model))],
  ] as const)(
    '%s: decodes what the server decoder decodes, refuses what it refuses, in any pieces',
    (method, messages) => {
      fc.assert(
        fc.property(messages, cuts, (sent, at) => {
          for (const bytes of sent) {
            const expected = layouts[method].decodeWhole(bytes);
            const decoded = decodeInPieces(method, bytes, at);
            if (expected instanceof UnparsableRequest) {
              expect(decoded).toEqual({ undecodable: expect.any(UnparsableRequest) });
            } else {
              expect(bytesAsHex(decoded)).toEqual(bytesAsHex(expected));
            }
          }
        }),
        { numRuns: 300, seed: 424242 },
      );
    },
  );

  it('reads a well-formed push itself and writes its gradients into the places offered', () => {
    const Request = messageType('SendGradsRequest');
    const content = Buffer.from(Float32Array.from({ length: 1000 }, (_, i) => i * 0.5).buffer);
    const bytes = Buffer.from(
      Request.encode(
        Request.fromObject({
          context: { trainerId: 7, step: 2, shardEpoch: 3 },
          grads: [{ name: 'w', elementType: 5, shape: [1000], content }],
          sparse: [{ table: 'emb', ids: Buffer.alloc(16, 1), grads: Buffer.alloc(32, 2) }],
        }),
      ).finish(),
    );
    const places = new Places();
    const wholes: Buffer[] = [];
    const decoded = decodeInPieces('SendGrads', bytes, [0.001, 0.3, 0.31, 0.9], places, wholes);
    expect(wholes).toEqual([]);
    const push = decoded as DecodedPush;
    const gradient = push.grads[0]!.content;
    expect(gradient.buffer).toBe(places.arena);
    expect(Buffer.from(gradient).equals(content)).toBe(true);
    expect(places.written.get(gradient)).toBe(content.byteLength);
    expect(bytesAsHex(push)).toEqual(bytesAsHex(definition.SendGrads.requestDeserialize(bytes)));
  });

  it('keeps a gradient aside when its name comes after its bytes, or its place is taken', () => {
    // Field 4 (content) before field 1 (name): legal protobuf, not what writers produce.
    const tensor = Buffer.concat([
      Buffer.from([0x22, 4, 1, 2, 3, 4]),
      Buffer.from([0x0a, 1, 0x77]),
      Buffer.from([0x10, 5]),
    ]);
    const twice = Buffer.concat([
      Buffer.from([0x12, tensor.length]),
      tensor,
      Buffer.from([0x12, tensor.length]),
      tensor,
    ]);
    const places = new Places();
    const decoded = decodeInPieces('SendGrads', twice, [], places) as DecodedPush;
    expect(decoded.grads.map((g) => g.content.buffer === places.arena)).toEqual([false, false]);
    expect(bytesAsHex(decoded)).toEqual(bytesAsHex(definition.SendGrads.requestDeserialize(twice)));
  });

  it('hands messages it does not read itself to the server decoder, contents put back in place', () => {
    // A well-formed gradient, then an unknown field as a group (wire type 3): protobufjs skips it.
    const content = Buffer.alloc(40, 9);
    const tensor = Buffer.concat([
      Buffer.from([0x0a, 1, 0x77, 0x10, 5, 0x22, content.length]),
      content,
    ]);
    const bytes = Buffer.concat([
      Buffer.from([0x12, tensor.length]),
      tensor,
      Buffer.from([0x4b, 0x08, 0x01, 0x4c]), // field 9: start group, a varint, end group
    ]);
    const wholes: Buffer[] = [];
    const decoded = decodeInPieces('SendGrads', bytes, [0.5], new Places(), wholes);
    expect(wholes).toEqual([bytes]);
    expect(bytesAsHex(decoded)).toEqual(bytesAsHex(definition.SendGrads.requestDeserialize(bytes)));
  });

  it('changes nothing of what a streamed push applies by placing its bytes as they come', () => {
    // The pushes the fuzzer sends, each applied twice to fresh shards: decoded here with places
    // handed out by a real StagedPush, and decoded whole by protobufjs with nothing placed.
    const streams = sendGradsStreamTarget(model).inputs.map(
      (input) => sendGradsStreamTarget(model).send(input).messages,
    );
    fc.assert(
      fc.property(streams, cuts, (messages, at) => {
        const placed = applyStream(messages, (push, bytes) =>
          decodeInPieces('SendGradsStream', bytes, at, { place: push.placeFor.bind(push) }),
        );
        const whole = applyStream(messages, (_push, bytes) =>
          layouts.SendGradsStream.decodeWhole(bytes),
        );
        expect(placed).toEqual(whole);
      }),
      { numRuns: 300, seed: 424242 },
    );
    // Pieces whose name or offset comes after their bytes, and a place already taken: the
    // second message names `w` before its bytes (a NaN among them) and `v` after them.
    const w = Buffer.from('w');
    const v = Buffer.from('v');
    for (const messages of [
      [
        chunkOf([
          [4, finite],
          [1, w],
          [2, 5],
        ]),
        chunkOf([
          [1, w],
          [2, 5],
          [4, withNaN],
          [1, v],
        ]),
      ],
      [
        chunkOf([
          [1, w],
          [2, 5],
          [4, finite.subarray(0, 32)],
        ]),
        chunkOf([
          [1, w],
          [2, 5],
          [4, withNaN.subarray(0, 32)],
          [3, 32],
        ]),
      ],
      [
        chunkOf([
          [1, w],
          [2, 5],
          [4, withNaN],
          [1, v],
        ]),
        chunkOf([
          [1, w],
          [2, 5],
          [4, finite],
        ]),
      ],
    ]) {
      const placed = applyStream(messages, (push, bytes) =>
        decodeInPieces('SendGradsStream', bytes, [0.5], { place: push.placeFor.bind(push) }),
      );
      expect(placed).toEqual(
        applyStream(messages, (_push, bytes) => layouts.SendGradsStream.decodeWhole(bytes)),
      );
    }
  });
});

/** A GradientChunk's fields in the order given: [field, bytes] for names and contents, varints as numbers. */
function chunkOf(fields: [number, Buffer | number][]): Buffer {
  const gradient = Buffer.concat(
    fields.map(([field, value]) =>
      typeof value === 'number'
        ? Buffer.from([field * 8, value])
        : Buffer.concat([Buffer.from([field * 8 + 2, value.length]), value]),
    ),
  );
  return Buffer.concat([Buffer.from([0x12, gradient.length]), gradient]);
}

const finite = Buffer.from(new Float32Array(16).fill(0.5).buffer);
const withNaN = Buffer.from(
  Float32Array.from({ length: 16 }, (_, i) => (i === 3 ? NaN : 0.25)).buffer,
);

/**
 * A shard holding the model's tensors (float32 `w` and `v`, float64 `b`, stored int64 `ids`);
 * gradients with NaN are skipped, so a NaN that slipped past the scan would be applied.
 */
function modelShard(): Shard {
  const shard = new Shard(0, 1, undefined);
  for (const { name, elementType, byteLength } of model.tensors) {
    shard.put(
      StoredTensor.create({
        name,
        elementType: elementType as 'ELEMENT_TYPE_FLOAT32',
        shape: [],
        content: new Uint8Array(byteLength).fill(0x11),
        config:
          elementType === 'ELEMENT_TYPE_INT64'
            ? null
            : { learningRate: { base: 1 }, nonFinite: 'NON_FINITE_POLICY_SKIP' },
        memory: undefined,
      }),
    );
  }
  shard.markInitialized();
  return shard;
}

/**
 * Stages a stream's messages as the service does (each piece through `add`, in order) and
 * applies it: the first refusal's code, or every tensor's bytes after the push.
 */
function applyStream(
  messages: Buffer[],
  decode: (push: StagedPush, bytes: Buffer) => unknown,
): string {
  const shard = modelShard();
  const push = new StagedPush((name) => shard.tensors.get(name));
  try {
    for (const bytes of messages) {
      const decoded = decode(push, bytes);
      if (
        decoded instanceof UnparsableRequest ||
        (decoded as { undecodable?: unknown }).undecodable
      )
        return 'unparsable';
      for (const piece of (decoded as DecodedPush).grads) {
        push.add(
          piece.name,
          isElementTypeName(piece.elementType) ? piece.elementType : undefined,
          piece.offset,
          piece.content,
          piece.offset === 0 ? piece.shape : [],
          false,
        );
      }
    }
    shard.applyPush(1, 1, push);
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  } finally {
    push.discard();
  }
  return [...shard.tensors.values()]
    .map((t) => `${t.name}:${Buffer.from(t.bytes()).toString('hex')}`)
    .join(' ');
}
